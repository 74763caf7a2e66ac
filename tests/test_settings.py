"""Settings merge: set defaults < config file < environment and flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gitswarm.engine.settings import config_file, file_settings, merge
from gitswarm.errors import BadInput
from gitswarm.problems.loader import load_set


def test_precedence_and_default_budget(problem_dir: Path, tmp_path: Path, monkeypatch):
    (problem_dir / "set.toml").write_text("[defaults]\nworkers = 3\nmax_steps = 7\n")
    problem_set = load_set(problem_dir)
    config = tmp_path / "gitswarm.toml"
    config.write_text('[solve]\nmodel = "openai/from-file"\nworkers = 6\n')
    monkeypatch.setenv("GITSWARM_CONFIG", str(config))
    cfg = merge(problem_set, None, {"workers": None, "seed": 3}, file_settings(config_file()))
    assert (cfg.model, cfg.workers, cfg.max_steps, cfg.seed) == ("openai/from-file", 6, 7, 3)
    assert cfg.budget == 8 * 3 and cfg.run == Path("runs") / problem_set.name
    cfg = merge(problem_set, tmp_path / "r", {"workers": 9, "model": "openai/flag"}, file_settings(config))
    assert (cfg.model, cfg.workers, cfg.run) == ("openai/flag", 9, tmp_path / "r")


def test_bad_config_files_are_named(tmp_path: Path, problem_dir: Path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[solve]\nwokers = 3\n")
    with pytest.raises(BadInput, match=r"unknown setting.*wokers"):
        file_settings(bad)
    bad.write_text("[solve\n")
    with pytest.raises(BadInput, match=r"bad\.toml: invalid TOML"):
        file_settings(bad)
    monkeypatch.setenv("GITSWARM_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(BadInput, match="no such file"):
        config_file()
    with pytest.raises(BadInput, match="no problem nope"):
        merge(load_set(problem_dir), None, {"problem_ids": ("nope",)}, {})


def test_problem_ids_in_a_config_file_that_are_not_a_list_of_names_are_refused_as_a_setting(
        problem_dir: Path, tmp_path: Path):
    # They were iterated before SolveConfig checked them: 5 raised a TypeError (an internal
    # error), and "p1" was read letter by letter ("no problem 1, p").
    config = tmp_path / "gitswarm.toml"
    for value in ("5", '"p1"', "[1]"):
        config.write_text(f"[solve]\nproblem_ids = {value}\n")
        with pytest.raises(ValidationError, match="problem_ids"):
            merge(load_set(problem_dir), None, {}, file_settings(config))


def test_the_episode_cap_is_three_times_the_budget_unless_given(problem_dir: Path):
    problem_set = load_set(problem_dir)
    assert merge(problem_set, None, {"budget": 5}, {}).max_episodes == 15
    assert merge(problem_set, None, {}, {}).max_episodes == 3 * 8 * 3  # the default budget: 8 a problem
    assert merge(problem_set, None, {"budget": 5}, {"max_episodes": 7}).max_episodes == 7
    assert merge(problem_set, None, {"budget": 5, "max_episodes": 6}, {"max_episodes": 7}).max_episodes == 6
    cfg = merge(problem_set, None, {}, {})
    assert (cfg.no_progress, cfg.episode_timeout_s, cfg.idle_timeout_s, cfg.reply_timeout_s) == (4, 3 * 3600, 300, 1800)


def test_the_episode_cap_follows_a_budget_the_config_file_writes_as_text_or_a_float(problem_dir: Path,
                                                                                     tmp_path: Path):
    # The field reads "5" and 5.0 as 5, but the cap was left None: a TypeError where the run
    # compares its episodes with it (`may_start`, the stop rule).
    config = tmp_path / "gitswarm.toml"
    for value in ('"5"', "5.0"):
        config.write_text(f"[solve]\nbudget = {value}\n")
        cfg = merge(load_set(problem_dir), None, {}, file_settings(config))
        assert (cfg.budget, cfg.max_episodes) == (5, 15)


def test_max_tokens_is_refused_with_the_two_names_it_could_mean(tmp_path: Path):
    config = tmp_path / "gitswarm.toml"
    config.write_text("[solve]\nmax_tokens = 100000\n")
    with pytest.raises(BadInput, match=r"max_tokens .*max_total_tokens.*max_output_tokens"):
        file_settings(config)
    config.write_text("[solve]\nmax_total_tokens = 100000\nmax_output_tokens = 8000\n")
    assert file_settings(config) == {"max_total_tokens": 100000, "max_output_tokens": 8000}


def test_model_settings_reach_themodel_config(problem_dir: Path):

    cfg = merge(load_set(problem_dir), None, {
        "model": "openai/w", "merger_model": "openai/m", "max_output_tokens": 9000, "reasoning_effort": "high",
        "merger_reasoning_effort": "low", "tool_protocol": "text", "idle_timeout_s": 60.0,
        "reply_timeout_s": 900.0, "price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0,
        "price_cached_in_per_mtok": 0.3, "price_cache_write_per_mtok": 3.75}, {})
    worker, merger = cfg.models.worker, cfg.models.merger
    assert (worker.model, worker.reasoning_effort, merger.model, merger.reasoning_effort) == (
        "openai/w", "high", "openai/m", "low")
    for m in (worker, merger):
        assert (m.max_output_tokens, m.tool_protocol, m.idle_timeout_s, m.reply_timeout_s) == (9000, "text", 60, 900)
    assert (worker.price_in_per_mtok, worker.price_out_per_mtok, worker.price_cached_in_per_mtok,
            worker.price_cache_write_per_mtok) == (3.0, 15.0, 0.3, 3.75)
    # The user's prices are the workers' model's; a different merger model is priced by litellm.
    assert not merger.user_priced
    same = cfg.model_copy(update={"merger_model": None}).models.merger
    assert same.price_in_per_mtok == 3.0


def test_the_cli_choices_are_the_model_clients(problem_dir: Path):
    from typing import get_args

    from gitswarm.cli.common import Effort, ToolProtocol
    from gitswarm.models.config import ReasoningEffort
    from gitswarm.models.config import ToolProtocol as ClientProtocol

    assert get_args(Effort) == get_args(ReasoningEffort) and get_args(ToolProtocol) == get_args(ClientProtocol)


def test_grade_settings_come_from_the_grade_table_and_flags_win(tmp_path: Path):
    from gitswarm.engine.settings import grade_settings, merge_grade

    config = tmp_path / "gitswarm.toml"
    config.write_text('[solve]\nworkers = 2\n[grade]\nreasoning_effort = "high"\nreferee_model = "openai/r"\n')
    from_file = grade_settings(config)
    assert merge_grade({"reasoning_effort": None}, from_file).reasoning_effort == "high"
    flagged = merge_grade({"reasoning_effort": "low", "referee_model": None}, from_file)
    assert (flagged.reasoning_effort, flagged.referee_model) == ("low", "openai/r")
    assert merge_grade({}, grade_settings(None)).reasoning_effort is None
    config.write_text('[grade]\nreasoning = "high"\n')
    with pytest.raises(BadInput, match=r"unknown setting\(s\) reasoning in \[grade\]; did you mean reasoning_effort"):
        grade_settings(config)


def test_one_budget_default_for_every_builder(problem_dir: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from gitswarm.cli.main import app
    from gitswarm.engine.config import BUDGET_PER_PROBLEM, SolveConfig

    problem_set = load_set(problem_dir)
    per_set = BUDGET_PER_PROBLEM * len(problem_set.problems)
    assert merge(problem_set, None, {}, {}).budget == per_set  # solve, demo, replay, an experiment's arms
    assert SolveConfig.for_set(problem_set, tmp_path, model="m").budget == per_set  # a run built in code
    assert SolveConfig.for_set(problem_set, tmp_path, model="m", budget=2).budget == 2
    assert SolveConfig(problems=tmp_path, run=tmp_path, model="m").budget == BUDGET_PER_PROBLEM  # no set: one's
    shown = " ".join(CliRunner().invoke(app, ["solve", "--help"], env={"COLUMNS": "200"}).output.split())
    assert f"default {BUDGET_PER_PROBLEM} per problem" in shown
