"""`gitswarm show`: a problem's selected solution, one candidate or one review, read from the
session's finished demo run by the real CLI and held to what plain git shows."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import git
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.read import read_run

runner = CliRunner()
PROBLEMS = ("demo-divisors-36", "demo-hexagon-angles", "demo-odd-sum", "demo-reverse-words", "demo-shout")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def show(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["show", *args])
    assert result.exit_code == code, result.output
    return result.output


def body(text: str) -> str:
    """A file's text after its front matter."""
    return text.split("\n---\n", 1)[1].lstrip("\n").rstrip("\n")


def critical(run: Path):
    """The demo's flawed attempt and its critical review, as the read model has them."""
    problem = read_run(Memory(run)).problem("demo-odd-sum")
    flawed = next(c for c in problem.candidates if c.reviews.critical)
    return flawed, next(e for e in flawed.trail if e.verdict == "critical")


@pytest.mark.parametrize("pid", PROBLEMS)
def test_show_prints_each_demo_problems_solution_with_its_verification(run: Path, pid: str):
    solution = git(run, "show", f"main:problems/{pid}/SOLUTION.md")
    selected = next(line.split(": ", 1)[1] for line in solution.splitlines() if line.startswith("path: "))
    out = show(str(run), pid)
    assert body(solution) in out
    assert f"selected {selected} (commit " in out and "verification: verified (" in out
    assert out.count("\n  pass ") >= 2  # the passes that verified it, one line each
    assert "grade: not graded" in out


def test_show_json_carries_the_solution_text_and_the_selected_candidate(run: Path):
    data = json.loads(show(str(run), "demo-odd-sum", "--json"))
    solution = git(run, "show", "main:problems/demo-odd-sum/SOLUTION.md")
    assert data["text"].rstrip("\n") == body(solution)
    assert data["candidate"]["commit"] == data["selected_commit"] and data["verification"] == "verified"
    assert [v["verdict"] for v in data["candidate"]["trail"]].count("pass") >= 2


def test_the_flawed_attempt_shows_its_critical_review(run: Path):
    flawed, review = critical(run)
    name = flawed.path.rsplit("/", 1)[-1]
    out = show(str(run), "demo-odd-sum", "--candidate", name)
    assert f"candidate {flawed.path} of demo-odd-sum" in out  # one critical review, or two that ran at once
    assert re.search(r"rejected by reviews \(0 pass, 0 gaps, [12] critical", out), out
    assert f"  critical {review.worker} {review.episode} {review.path.split('/', 2)[-1]}" in out
    assert git(run, "show", f"main:{flawed.path}").rstrip("\n") in out
    assert show(str(run), "demo-odd-sum", "--candidate", flawed.commit[:8]) == out
    assert re.search(rf"other candidates \(`--candidate PATH` shows one\): attempts/{re.escape(name)} \(0 pass, "
                     r"0 gaps, [12] critical\)", show(str(run), "demo-odd-sum"))


def test_a_review_says_its_verdict_and_what_it_reviews(run: Path):
    flawed, review = critical(run)
    out = show(str(run), "demo-odd-sum", "--review", review.path.rsplit("/", 1)[-1])
    assert f"verdict: critical · by {review.worker} · episode {review.episode}" in out
    assert f"reviews {flawed.path.removeprefix('problems/demo-odd-sum/')} ({flawed.commit[:10]})" in out
    assert body(git(run, "show", f"main:{review.path}")) in out
    assert show(str(run), "demo-odd-sum", "--review", review.commit) == out
    assert show(str(run), "demo-odd-sum", "--review", review.episode) == out


def test_a_program_candidate_prints_each_of_its_files(run: Path):
    other = read_run(Memory(run)).problem("demo-shout").candidates[-1]  # the selected one or not, as the run went
    out = show(str(run), "demo-shout", "--candidate", other.path.removeprefix("problems/demo-shout/"))
    for name in git(run, "ls-tree", "-r", "--name-only", f"main:{other.path}").split():
        slug = other.path.rsplit("/", 1)[-1]
        assert f"## code/{slug}/{name}\n\n```\n" in out
        assert git(run, "show", f"main:{other.path}/{name}").rstrip() in out


def test_unknown_names_list_the_valid_ones_nearest_first(run: Path):
    out = show(str(run), "demo-odd-sun", code=2)
    assert "has no problem 'demo-odd-sun'" in out and "nearest first: demo-odd-sum, " in out
    for pid in PROBLEMS:
        assert pid in out
    flawed, _ = critical(run)
    out = show(str(run), "demo-odd-sum", "--candidate", "first-try", code=2)
    assert "has no candidate 'first-try' of demo-odd-sum" in out
    assert f"nearest first: {flawed.path.removeprefix('problems/demo-odd-sum/')}, attempts/" in out
    assert "its reviews, nearest first: reviews/" in show(str(run), "demo-odd-sum", "--review", "nope", code=2)
    assert "not both" in show(str(run), "demo-odd-sum", "--review", "a", "--candidate", "b", code=2)


def test_a_graded_solution_shows_its_grade(run: Path, tmp_path: Path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy, symlinks=True)
    graded = runner.invoke(app, ["grade", str(copy), "--problem", "demo-divisors-36"])
    assert graded.exit_code == 0, graded.output
    assert "grade: 1/1 by answer\n" in show(str(copy), "demo-divisors-36")


def test_a_run_on_a_remote_is_read_from_its_url(run: Path):
    assert "--- problems/demo-odd-sum/SOLUTION.md ---" in show(run.as_uri(), "demo-odd-sum")


def test_a_problem_without_a_selection_lists_its_candidates(memory: Memory, tmp_path: Path):
    out = show(str(memory.path), "odd")
    assert "odd (proof): open; no solution is selected yet" in out and "no candidates yet." in out
    attempt = memory.contribute(Contribution(
        problem="odd", episode="e1", worker="w01", kind="attempt", title="a try",
        files={"attempts/try.md": "Odd times odd is odd."}, parent=memory.main(), op="e1-final")).commit
    memory.compose()
    out = show(str(memory.path), "odd")
    assert "odd (proof): candidate; no solution is selected yet" in out
    assert f"\n  attempts/try.md  {attempt[:10]}  0 nominations  0 pass, 0 gaps, 0 critical  unverified" in out
    candidate = show(str(memory.path), "odd", "--candidate", "try.md")
    assert "Odd times odd is odd." in candidate and f"commit {attempt[:10]} · w01 · episode e1\n" in candidate
    shown = json.loads(show(str(memory.path), "odd", "--candidate", "try.md", "--json"))
    assert (shown["worker"], shown["episode"]) == ("w01", "e1")
    assert json.loads(show(str(memory.path), "odd", "--json"))["selected"] is None
    assert "not a gitswarm run" in show(str(tmp_path), "odd", code=2)
