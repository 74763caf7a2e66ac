"""Steps per episode by problem kind (`max_steps_by_kind`): set in a set's set.toml, a config
file or on the command line (the command line wins, as for every setting), told in the
prompts, and the bound a real episode runs to (scripted replies through the fake provider)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from test_episode_replies import call, one_episode
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import system_prompt
from gitswarm.engine.plan import plan
from gitswarm.engine.settings import file_settings, merge
from gitswarm.fakeserver import FakeReply
from gitswarm.problems.loader import load_set

LOOK = FakeReply(tool_calls=[call("list_items", {})])


def test_the_set_the_config_file_and_the_command_line_set_steps_by_kind(problem_dir: Path, tmp_path: Path):
    (problem_dir / "set.toml").write_text("[defaults]\nmax_steps = 7\nmax_steps_by_kind = {reproduce = 300}\n")
    problem_set = load_set(problem_dir)
    cfg = merge(problem_set, None, {}, {})
    assert (cfg.steps("reproduce"), cfg.steps("proof")) == (300, 7)
    config = tmp_path / "gitswarm.toml"
    config.write_text("[solve]\nmax_steps_by_kind = {reproduce = 500, program = 40}\n")
    cfg = merge(problem_set, None, {}, file_settings(config))
    assert (cfg.steps("reproduce"), cfg.steps("program"), cfg.steps("answer")) == (500, 40, 7)
    cfg = merge(problem_set, None, {"max_steps_by_kind": ("reproduce=1000",)}, file_settings(config))
    assert (cfg.steps("reproduce"), cfg.steps("program")) == (1000, 7)  # the flag's table wins whole


@pytest.mark.parametrize(("given", "said"), [
    ({"max_steps_by_kind": ("reproduce",)}, "give KIND=N, e.g. reproduce=300"),
    ({"max_steps_by_kind": {"nope": 3}}, "'proof', 'answer', 'program' or 'reproduce'"),
    ({"max_steps_by_kind": ("reproduce=1",)}, "greater than or equal to 2")])
def test_a_bad_kind_or_count_is_refused_saying_what_to_give(given: dict, said: str):
    with pytest.raises(ValidationError, match=said):
        SolveConfig(problems=Path("."), run=Path("r"), model="m", **given)


def test_the_option_is_offered_and_the_prompts_tell_each_kind_its_steps():
    shown = " ".join(CliRunner().invoke(app, ["solve", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "--max-steps-by-kind KIND=N" in shown
    cfg = SolveConfig(problems=Path("."), run=Path("r"), model="m", max_steps=6,
                      max_steps_by_kind={"reproduce": 300})
    for kind, steps in (("reproduce", 300), ("proof", 6)):
        ep = plan(cfg, "e00001", "w01", ("p", kind, "P", None), ("a" * 40, "a" * 40), None)
        assert f"At most {steps} steps" in system_prompt(ep)


@pytest.mark.anyio
@pytest.mark.parametrize(("by_kind", "limit"), [({"proof": 4}, 4), ({"reproduce": 4}, 2)])
async def test_an_episode_runs_to_the_steps_of_its_problems_kind(tmp_path: Path, by_kind: dict, limit: int):
    record, server, _ = await one_episode(tmp_path, [LOOK] * 5, max_steps=2, max_steps_by_kind=by_kind)
    assert record.status == "failed" and f"step limit ({limit}) reached" in record.note
    assert len(server.requests) == limit
