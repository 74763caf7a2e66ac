"""Selector quality against the referee: the report says how often the selection picked a
best-graded candidate, how many critical reviews the referee confirms and how many passes it
contradicts. The arithmetic over the read model's own types (a problem whose selection missed
its best rival, a false pass, a confirmed critical review, an author's own uncounted review),
then a real demo run graded with `grade --all`, read by the real CLI's report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.candidate import Candidate
from gitswarm.domain.grade import Grade
from gitswarm.domain.review import Review
from gitswarm.domain.selection import Selection
from gitswarm.readmodel.model import Counts, ProblemState
from gitswarm.report.selector import selector_quality

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def candidate(commit: str, score: float | None, *verdicts: str, own: str | None = None) -> Candidate:
    grade = Grade("p", commit, f"attempts/{commit}.md", "answer", None, score, 1.0) if score is not None else None
    trail = tuple(Review(f"w{i}", f"e{i}", v, f"r{commit}{i}", "r.md") for i, v in enumerate(verdicts))
    if own:
        trail += (Review("author", "e9", own, f"r{commit}9", "r.md", counted=False),)
    return Candidate(f"problems/p/attempts/{commit}.md", commit, grade=grade, trail=trail)


def problem(pid: str, chosen: str | None, *candidates: Candidate) -> ProblemState:
    selected = Selection(chosen, f"problems/{pid}/attempts/{chosen}.md", 0) if chosen else None
    return ProblemState(pid, "answer", "selected", Counts(), candidates, selected, None, None)


def test_the_figures_count_what_the_referee_graded() -> None:
    problems = [
        problem("missed", "weak", candidate("weak", 0.0, "pass", "pass"), candidate("strong", 1.0, "critical")),
        problem("right", "good", candidate("good", 1.0, "pass", own="critical"), candidate("bad", 0.0, "critical")),
        problem("ungraded", "u", candidate("u", None, "pass")),
        problem("open", None, candidate("lone", 1.0, "gaps")),
    ]
    found = selector_quality(problems, "openai/m")
    assert (found.graded, found.candidates) == (5, 6)
    assert (found.selected, found.picked_best, found.contested) == (2, 1, 2)
    assert (found.critical, found.critical_confirmed) == (2, 1)  # the author's own critical is not counted
    assert (found.passes, found.false_passes) == (3, 2)
    words = found.sentence()
    assert "picked a best-graded candidate in 1 of 2 problem(s) (2 with rivals graded)" in words
    assert "1 of 2 critical review(s) confirmed; 2 of 3 pass review(s) contradicted (false passes)" in words
    assert "1 candidate(s) ungraded" in words and "reviews by openai/m" in words
    assert "no candidate is graded yet" in selector_quality([problem("u", "u", candidate("u", None))], "m").sentence()


def test_the_report_of_a_graded_demo_run_says_it(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    graded = runner.invoke(app, ["grade", str(copy), "--all"])
    assert graded.exit_code in (0, 1), graded.output  # 1: a candidate the scripted judge cannot judge
    done = runner.invoke(app, ["report", str(copy), "-f", "json", "-o", str(tmp_path / "r.json")])
    assert done.exit_code == 0, done.output
    selector = json.loads((tmp_path / "r.json").read_text())["selector"]
    # the proof stays ungraded without --referee-model; the answers and programs are graded by their keys
    assert selector["graded"] >= selector["selected"] >= 4 and selector["picked_best"] == selector["selected"]
    assert selector["passes"] >= 4 and selector["false_passes"] == 0 and not selector["scripted"]
    shown = runner.invoke(app, ["report", str(copy), "-o", str(tmp_path / "r.md")])
    assert shown.exit_code == 0 and "Selection and reviews against the referee" in (tmp_path / "r.md").read_text()
