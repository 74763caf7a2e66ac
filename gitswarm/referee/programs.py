"""Grade a program candidate: its files plus the problem's hidden tests, run by pytest in the sandbox.

Layout of the scratch folder (the only place the hidden tests are ever written):

    <scratch>/                  the candidate's files, as committed (cwd of the tests)
    <scratch>/.gitswarm_tests/  the hidden tests, our pytest.ini and the JUnit report

Agents cannot write a path starting with `.git`, so the tests folder never collides with a
candidate file. Pytest is started isolated (`python -I`: a candidate's `pytest.py` cannot
shadow it), with our own config file and `--confcutdir` (a candidate's `conftest.py`,
`pytest.ini` or `pyproject.toml` is ignored), without plugin autoloading and without cache.
Outcomes are read from pytest's JUnit XML report; a test module that fails to import is
one error. The candidate's code runs inside the test process, so a program written to
tamper with pytest itself is beyond what this grading can rule out.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gitswarm.errors import BadInput
from gitswarm.problems.model import Problem
from gitswarm.referee.junit import read_cases
from gitswarm.sandbox import Limits, SandboxResult, run

TESTS_DIR = ".gitswarm_tests"
REPORT = f"{TESTS_DIR}/report.xml"
_INI = "[pytest]\npythonpath = ..\n"  # the candidate's folder, as `python -m pytest` would
DEFAULT_LIMITS = Limits(wall_seconds=120.0, cpu_seconds=120, memory_bytes=2 << 30)


@dataclass(frozen=True)
class TestOutcome:
    """One test's result as pytest reported it."""

    name: str
    outcome: str
    """passed, failed, error or skipped."""
    message: str = ""


@dataclass(frozen=True)
class ProgramGrade:
    """The hidden tests' verdict on a program: score = passed / total, resolved = all passed."""

    passed: int
    total: int
    outcomes: list[TestOutcome] = field(default_factory=list)
    exit_code: int = 0
    timed_out: bool = False
    isolation: str = ""
    duration_seconds: float = 0.0
    output: str = ""
    """The tail of pytest's output, for a human reading the grade."""

    @property
    def score(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def resolved(self) -> bool:
        return self.total > 0 and self.passed == self.total


class ProgramGradingError(Exception):
    """The problem cannot be graded as a program (no hidden tests)."""


def hidden_tests(problem: Problem) -> dict[str, bytes]:
    """The problem's hidden test files, keyed by their path in the scratch folder."""
    if problem.tests_dir is None or not problem.tests_dir.is_dir():
        raise ProgramGradingError(f"{problem.id} has no hidden tests folder to grade against")
    files = {f"{TESTS_DIR}/{p.relative_to(problem.tests_dir).as_posix()}": p.read_bytes()
             for p in sorted(problem.tests_dir.rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts}
    files.setdefault(f"{TESTS_DIR}/pytest.ini", _INI.encode())
    return files


def grade_program(problem: Problem, files: dict[str, bytes],
                  limits: Limits = DEFAULT_LIMITS) -> ProgramGrade:
    """Run the hidden tests of `problem` against the candidate `files` (path -> content)."""
    stray = [name for name in files if name.split("/")[0] == TESTS_DIR]
    if stray:
        raise BadInput(f"candidate files may not live under {TESTS_DIR}/: {stray[0]}")
    scratch = Path(tempfile.mkdtemp(prefix="gitswarm-grade-"))
    try:
        result = run(_argv(), files={**files, **hidden_tests(problem)}, workdir=scratch / "work",
                     limits=limits, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, packages=("pytest",))
        report = scratch / "work" / REPORT
        outcomes = _parse_report(report.read_bytes()) if report.is_file() else []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _grade(outcomes, result)


def _argv() -> list[str]:
    return [sys.executable, "-I", "-m", "pytest", "-q", "--tb=short", "-c", f"{TESTS_DIR}/pytest.ini",
            f"--rootdir={TESTS_DIR}", f"--confcutdir={TESTS_DIR}", "-p", "no:cacheprovider",
            f"--junitxml={REPORT}", "-o", "junit_family=xunit2", TESTS_DIR]


def _grade(outcomes: list[TestOutcome], result: SandboxResult) -> ProgramGrade:
    passed = sum(o.outcome == "passed" for o in outcomes)
    total = len(outcomes)
    if total == 0 or result.timed_out:
        # No report, or one cut short: nothing can be credited as passed with confidence.
        reason = "timed out" if result.timed_out else "pytest produced no test results"
        passed, total = 0, max(total, 1)
        outcomes = [*outcomes, TestOutcome("<run>", "error", reason)]
    output = (result.stdout + result.stderr)[-4000:]
    return ProgramGrade(passed, total, outcomes, result.exit_code, result.timed_out,
                        result.isolation, round(result.duration_seconds, 3), output)


def _parse_report(data: bytes) -> list[TestOutcome]:
    """Test outcomes from a JUnit XML report (skipped tests count as not passed)."""
    return [TestOutcome("::".join(p for p in case.parts if p), "failed" if case.status == "failure" else case.status,
                        case.message[:300]) for case in read_cases(data) or []]
