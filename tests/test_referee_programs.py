"""Program grading: hidden tests run in the sandbox against the candidate's files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from gitswarm.errors import BadInput
from gitswarm.problems.loader import load_set
from gitswarm.problems.model import Kind, Problem
from gitswarm.referee.programs import ProgramGradingError, grade_program, hidden_tests
from gitswarm.resources import resolve_set
from gitswarm.sandbox import Limits


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _programs(set_name: str) -> list[Problem]:
    return [p for p in load_set(resolve_set(set_name)).problems if p.kind == Kind.PROGRAM]


SHIPPED = [pytest.param(p, id=p.id) for p in _programs("demo")] + [
    pytest.param(p, id=p.id, marks=pytest.mark.slow) for p in _programs("programs")]


@pytest.mark.parametrize("problem", SHIPPED)
def test_reference_scores_one_and_starter_below(problem: Problem):
    reference = grade_program(problem, _files(problem.reference_dir))
    assert reference.score == 1.0 and reference.resolved, reference.output
    assert reference.total >= 5
    starter = grade_program(problem, _files(problem.starter_dir))
    assert starter.score < 1.0 and not starter.resolved
    assert starter.total == reference.total


@pytest.fixture
def rev(problem_dir: Path) -> Problem:
    return load_set(problem_dir).get("rev")


def test_partial_score_counts_each_test(rev: Problem, tmp_path: Path):
    tests = rev.tests_dir / "test_more.py"
    tests.write_text("from solution import rev\n\ndef test_empty():\n    assert rev('') == ''\n\n"
                     "def test_one():\n    assert rev('a') == 'a'\n")
    starter = grade_program(rev, {"solution.py": b"def rev(s):\n    return s\n"})
    assert (starter.passed, starter.total) == (2, 3) and starter.score == pytest.approx(2 / 3)
    failed = [o for o in starter.outcomes if o.outcome != "passed"]
    assert len(failed) == 1 and "test_rev" in failed[0].name


def test_candidate_cannot_rig_pytest(rev: Problem):
    """A conftest.py forcing passes, a pytest.ini and a fake pytest module change nothing."""
    rigged = {
        "solution.py": b"def rev(s):\n    return s\n",
        "conftest.py": b"import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                       b"def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
                       b"    outcome.get_result().outcome = 'passed'\n",
        "pytest.ini": b"[pytest]\naddopts = --junitxml=elsewhere.xml -p no:junitxml\n",
        "pytest.py": b"import sys\nprint('fake pytest')\nsys.exit(0)\n",
    }
    result = grade_program(rev, rigged)
    assert (result.passed, result.total) == (0, 1)
    assert not (rev.tests_dir.parent / "conftest.py").exists()


def test_missing_solution_and_timeout_score_zero(rev: Problem):
    missing = grade_program(rev, {"other.py": b"x = 1\n"})
    assert missing.score == 0.0 and missing.total >= 1
    slow = grade_program(rev, {"solution.py": b"while True:\n    pass\n"},
                         Limits(wall_seconds=3, cpu_seconds=3))
    assert slow.timed_out and slow.score == 0.0 and not slow.resolved


def test_hidden_tests_stay_in_scratch(rev: Problem, tmp_path: Path):
    before = set(Path(tempfile.gettempdir()).glob("gitswarm-grade-*"))
    grade_program(rev, {"solution.py": b"def rev(s):\n    return s[::-1]\n"})
    assert set(Path(tempfile.gettempdir()).glob("gitswarm-grade-*")) == before
    assert all(name.startswith(".gitswarm_tests/") for name in hidden_tests(rev))
    with pytest.raises(BadInput, match="may not live under"):
        grade_program(rev, {".gitswarm_tests/test_x.py": b""})


def test_problem_without_tests_is_refused(problem_dir: Path):
    with pytest.raises(ProgramGradingError):
        grade_program(load_set(problem_dir).get("sum"), {})
