"""The run's story in the plain views: a review's verdict and what it reviews in `gitswarm log`
and in the progress lines, and `log`'s filters refusing values that match nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.cli.progress import printer
from gitswarm.core.events import event_of
from gitswarm.engine.events import read_events
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.read import read_run

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def log(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["log", *args])
    assert result.exit_code == code, result.output
    return result.output


def test_log_shows_the_critical_review_with_its_verdict_and_the_attempt_it_reviews(run: Path):
    problem = read_run(Memory(run)).problem("demo-odd-sum")
    flawed = next(c for c in problem.candidates if c.reviews.critical)
    review = next(e for e in flawed.trail if e.verdict == "critical")
    reviewed = flawed.path.removeprefix("problems/demo-odd-sum/")
    out = log(str(run), "--problem", "demo-odd-sum", "--kind", "review")
    block = out.split(f"commit {review.commit}\n", 1)[1].split("\ncommit ", 1)[0]
    assert f"    verdict: critical · reviews {reviewed} ({flawed.commit[:10]})\n" in block
    assert out.count("verdict: ") == git(run, "log", "main", "--grep=Gitswarm-Kind: review",
                                         "--grep=Gitswarm-Problem: demo-odd-sum", "--all-match", "--oneline"
                                         ).count("\n")
    oneline = log(str(run), "--problem", "demo-odd-sum", "--oneline")
    assert f"{review.commit[:10]} {review.worker:<8} review(demo-odd-sum): review of {reviewed} [critical]" in oneline
    assert "[pass]" in oneline and "attempt(demo-odd-sum)" in oneline


def test_log_refuses_a_kind_or_problem_that_matches_nothing(run: Path):
    out = log(str(run), "--kind", "reviw", code=2)
    assert "--kind 'reviw' is not a kind; the kinds, nearest first: review, " in out
    for kind in ("note", "lemma", "attempt", "code", "summary", "nomination", "merge"):
        assert kind in out
    out = log(str(run), "--problem", "demo-odd-sun", code=2)
    assert "has no problem 'demo-odd-sun'; its problems, nearest first: demo-odd-sum, " in out
    assert "demo-reverse-words" in out
    assert "review(demo-odd-sum)" in log(str(run), "--kind", "review", "--problem", "demo-odd-sum", "--oneline")


def test_a_committed_review_says_its_verdict_and_what_it_reviews(capsys):
    show = printer()
    show(event_of("run_started", {"run": "r", "workers": 2, "budget": 20, "charged": 0}))
    show(event_of("committed", {"episode": "e00007", "worker": "w02", "problem": "demo-odd-sum", "commit": "abc",
                             "charged": 5, "verdict": "critical", "reviews": "attempts/first-try-e00006.md"}))
    show(event_of("committed", {"episode": "e00008", "worker": "w01", "problem": "demo-odd-sum",
                             "commit": "def", "charged": 6}))
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith(" 5/20 e00007 w02 reviewed attempts/first-try-e00006.md on demo-odd-sum: critical")
    assert lines[2].endswith(" 6/20 e00008 w01 committed to demo-odd-sum (def)")


def test_the_demos_critical_review_is_a_progress_line(run: Path, capsys):
    show = printer()
    for event in read_events(run):
        show(event)
    assert any(line.endswith(": critical") and " reviewed attempts/" in line
               for line in capsys.readouterr().out.splitlines())


def test_a_resumed_run_says_it_resumes_and_what_it_starts_from(capsys):
    show = printer()
    show(event_of("run_started", {"run": "r", "workers": 4, "budget": 20, "charged": 14, "episodes": 17,
                               "max_episodes": 60, "interrupted": 2}))
    show(event_of("run_started", {"run": "r", "workers": 4, "budget": 20, "charged": 0, "episodes": 0,
                               "max_episodes": 60}))
    first, fresh = capsys.readouterr().out.splitlines()
    assert first == ("resuming run r: 14 of 20 episodes spent (17 in all, at most 60), 2 left unfinished by a crash "
                     "or kill and run again where their problem is open; 4 workers")
    show(event_of("run_started", {"run": "r", "workers": 4, "budget": 20, "charged": 14, "episodes": 17,
                               "max_episodes": 60, "interrupted": 0}))  # after a graceful stop: no "0 cut off"
    said = capsys.readouterr().out.strip()
    assert said == "resuming run r: 14 of 20 episodes spent (17 in all, at most 60); 4 workers"
    assert fresh.startswith("run r: 4 workers, budget 20 episodes")
