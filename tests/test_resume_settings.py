"""A resume with other settings than the run's, through the real CLI on a copy of a finished
demo run: said before anything runs (old and new); a rule that would change what is decided is
refused (exit 2, nothing written) unless `--change-rule` is given, and then every view agrees."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import git
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app

runner = CliRunner()
NO_SERVER = ["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--no-tui"]


@pytest.fixture
def run(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shutil.copytree(demo_run(tmp_path_factory), tmp_path / "run", copy_function=shutil.copyfile)


def refs(run: Path) -> str:
    return git(run, "for-each-ref", "--format=%(refname) %(objectname)")


def test_a_rule_that_would_undo_what_is_decided_is_refused(run: Path):
    before = refs(run)
    result = runner.invoke(app, ["solve", "demo", "--run", str(run), "--verify", "3", *NO_SERVER])
    assert result.exit_code == 2, result.output
    said = result.stderr.splitlines()
    assert "differ from its last start" in said[0] and "verify 3 (was 2)" in said[0]
    assert "model openai/x (was openai/gitswarm-scripted)" in said[0]
    assert "would change what" in said[-1] and "settled, verified -> leads" in said[-1]
    assert "give --change-rule" in said[-1] and "(verify 2)" in said[-1]
    assert refs(run) == before


def test_with_change_rule_every_view_then_agrees(run: Path):
    charged = json.loads(runner.invoke(app, ["status", str(run), "--json"]).stdout)["totals"]["charged"]
    result = runner.invoke(app, ["solve", "demo", "--run", str(run), "--verify", "3", "--change-rule",
                                 "--budget", str(charged), *NO_SERVER])  # nothing left to spend: no call
    assert result.exit_code == 0, result.output
    assert "differ from its last start" in result.stderr
    solution = git(run, "show", "main:problems/demo-divisors-36/SOLUTION.md")
    assert "verification: unverified" in solution
    status = json.loads(runner.invoke(app, ["status", str(run), "--json"]).stdout)
    assert {p["verification"] for p in status["problems"]} == {"unverified"}
    assert {p["verify"] for p in status["problems"]} == {3}
    again = runner.invoke(app, ["demo", "--run", str(run), "--no-tui"])  # the demo's own rule, verify 2
    assert again.exit_code == 2, again.output
    assert "give another --run" in again.stderr and "--change-rule" not in again.stderr


def test_a_resume_with_the_same_settings_says_nothing_of_them(run: Path):
    result = runner.invoke(app, ["demo", "--run", str(run), "--no-tui"])
    assert result.exit_code == 0, result.output
    assert "differ from its last start" not in result.stderr
