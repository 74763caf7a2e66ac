"""The options of `solve` and `worker` come from `SolveConfig`'s fields: every option that sets a
field is named as the field (less a unit), its help shows the field's own default, its lower
bound is the field's, and what the options give reaches the field of that name."""

from __future__ import annotations

import re

import annotated_types
import click
import pytest
import typer

from gitswarm.cli.fieldopts import default_of, field_values, lower_bound, option, option_name, shown
from gitswarm.cli.main import app
from gitswarm.engine.config import BUDGET_PER_PROBLEM, EPISODES_PER_CHARGE, PARTS, SolveConfig

NOT_FIELDS = {"solve": {"mirror", "claim_ttl", "patience", "prune_batch", "as_json", "tui", "max_tokens",
                        "change_rule"},
              "worker": {"url", "name", "folder", "patience", "references", "experiment", "as_json", "tui",
                         "slots"}}
"""The parameters that set no field of the run's settings: the process's own or the output's."""


def command(name: str) -> click.Command:
    group = typer.main.get_command(app)
    return group.get_command(typer.Context(group), name)  # type: ignore[attr-defined]


def options(name: str) -> dict[str, click.Parameter]:
    """The parameters of a command that set a `SolveConfig` field, by field."""
    params = {p.name: p for p in command(name).params if p.name}
    return {field: params[p] for field in SolveConfig.model_fields if (p := option_name(field, params))}


@pytest.mark.parametrize("name", ["solve", "worker"])
def test_every_option_but_the_process_s_own_sets_a_field_of_its_name(name: str):
    params = {p.name for p in command(name).params}
    assert params - {p.name for p in options(name).values()} == NOT_FIELDS[name]


@pytest.mark.parametrize("name", ["solve", "worker"])
def test_every_option_shows_its_field_s_default_and_bound(name: str):
    for field, param in options(name).items():
        info = SolveConfig.model_fields[field]
        default = None if info.is_required() else info.get_default()
        text = getattr(param, "help", None) or ""
        said = set(re.findall(r"\bdefault:? (\d[\d.]*)", text))  # the numbers said to be a default
        if default is not None and default not in ((), {}) and not isinstance(default, bool):
            assert f"default {shown(default)}" in text or f"{shown(default)} (default)" in text, (field, text)
            assert said <= {shown(default)}, (field, text)
        else:  # None's meaning is said in words; time_limit says stop_grace_s's, max_episodes the cap's
            assert said <= {default_of("stop_grace_s"), str(EPISODES_PER_CHARGE)}, (field, text)
        bound = lower_bound(info)
        if bound is not None and (name, field) != ("solve", "workers"):  # 0: a coordinator with no slots
            assert getattr(param, "min", None) == bound, field
    budget = next(p for p in command("solve").params if p.name == "budget")
    assert f"default {BUDGET_PER_PROBLEM} per problem" in (getattr(budget, "help", None) or "")


def test_a_field_s_default_and_bound_make_its_option(monkeypatch: pytest.MonkeyPatch):
    info = SolveConfig.model_fields["max_steps"]
    monkeypatch.setattr(info, "default", 30)
    made = option("max_steps", "Model calls per episode at most (default {default}); grace {stop_grace_s} s.")
    assert made.help == "Model calls per episode at most (default 30); grace 20 s."
    assert made.min == 2 and lower_bound(info) == 2
    assert lower_bound(SolveConfig.model_fields["idle_timeout_s"]) == 0  # gt=0
    assert any(isinstance(m, annotated_types.Gt) for m in SolveConfig.model_fields["idle_timeout_s"].metadata)


def test_the_options_values_reach_the_fields_by_name():
    given = field_values({"idle_timeout": 5.0, "price_in": 1.5, "problem": ["a", "b"], "seed": 3, "mirror": "x"})
    assert given == {"idle_timeout_s": 5.0, "price_in_per_mtok": 1.5, "problem_ids": ("a", "b"), "seed": 3}
    assert set(options("worker")) <= PARTS["model"]  # a worker sets its model's fields, the run's come published
