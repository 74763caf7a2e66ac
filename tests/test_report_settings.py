"""The report names what a run ran with, from what the run records: a resumed run's starts, and
a run whose event log is gone (model and workers not recorded, said so, never guessed)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.core.events import EVENT_LOG, event_of
from gitswarm.engine.events import EventLog

runner = CliRunner()


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def report(run: Path, *args: str) -> str:
    result = runner.invoke(app, ["report", str(run), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_resumed_run_names_its_last_start_and_every_model(run: Path, tmp_path: Path):
    resumed = tmp_path / "resumed"
    shutil.copytree(run, resumed)
    log = EventLog(resumed)  # a resume's start, as the engine writes it: more budget, another model
    log.emit(event_of("run_started", {"run": "r", "model": "openai/another-model", "budget": 80, "workers": 2,
                                      "charged": 43, "problems": [], "episodes": 43, "max_episodes": 240,
                                      "set_aside": [], "stale_locks_removed": []}, time.time()))
    log.close()
    settings = json.loads(report(resumed, "-f", "json"))["settings"]
    assert (settings["budget"], settings["workers"], settings["max_episodes"], settings["starts"]) == (80, 2, 240, 2)
    assert settings["model"] == "openai/gitswarm-scripted, then openai/another-model"
    markdown = report(resumed)
    assert "Model openai/gitswarm-scripted, then openai/another-model; budget 80 episodes" in markdown
    assert "workers 2; started 2 times (resumed)" in markdown


def test_without_an_event_log_it_says_what_is_not_recorded(run: Path, tmp_path: Path):
    bare = tmp_path / "bare"
    shutil.copytree(run, bare)
    (bare / EVENT_LOG).unlink()
    settings = json.loads(report(bare, "-f", "json"))["settings"]
    assert (settings["model"], settings["budget"], settings["workers"], settings["source"]) == \
        (None, None, None, "not recorded")
    assert (settings["verify"], settings["settle_nominations"]) == (2, 3)  # the ledger keeps the rule
    assert "Model not recorded; budget not recorded; workers not recorded." in report(bare)
