"""Grade a reproduce candidate as ProgramBench's `eval.py` grades a submission, in the sandbox.

1. A fresh copy of the candidate's tree; every file whose sha256 is the reference
   executable's, or one of the problem's `eval_clean_hashes`, is deleted (copying the
   reference scores nothing), and so is a stale `./executable` (a prebuilt binary shipped
   with the code: compile.sh must make the executable).
2. `compile.sh` at the tree's root runs (`chmod +x ./compile.sh && ./compile.sh`), bounded by
   `compile_timeout` (900 s by default), with no network, and nothing is left running. It
   must leave `./executable`; an executable whose hash is a clean hash is refused too. The
   executable is moved aside (the stash) and its sha256 recorded in the grade.
3. Each test branch with counted tests runs in a fresh folder holding only that branch's
   files and `./executable` restored from the stash, whose sha256 is checked against the
   recorded one first (an executable swapped after the build fails the branch:
   `executable_hash_mismatch`): pytest over `eval/tests`, writing JUnit XML
   (`eval/results.xml`), bounded by `branch_timeout` (2,400 s by default).
4. Every expected test (tests.json's counted tests) has a status: passed, failure, error,
   skipped, or `not_run` (missing from the report, or its branch could not run), and only
   passed counts. Score = passed / expected tests; `resolved` is a score of 1.0, `almost
   resolved` one of at least 0.95. Listed names are matched to the report's without the
   `eval.` prefix (`suite.canonical`), as the harness credits them.

The hidden reference is built (or taken ready) by `builds.reference_executable`, for its hash.
A problem that names an image is graded in its grading image (`sandbox.programs_in`): each
program in a fresh container of it, the reference's hash taken in its image
(`builds.reference_digest`), nothing of the host in view, so nothing of it to hide.
The candidate's build and program never see the problem set, nor any copy of the reference
the machine holds (`hidden`, `sandbox.copies`): where nothing can be hidden (programs run
unconfined) and such a copy exists, the problem is not graded there.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gitswarm.problems.model import Problem
from gitswarm.problems.suite import SUITE_FILE, Branch, Suite, SuiteError, canonical, read_suite
from gitswarm.referee.builds import (
    COMPILE_TIMEOUT,
    ReproduceGradingError,
    Step,
    reference_digest,
    reference_executable,
    sha256,
    step_of,
)
from gitswarm.referee.junit import Case, read_cases
from gitswarm.referee.submission import EXECUTABLE, compile_tree, copy_candidate, remove_clean, remove_stale
from gitswarm.sandbox import Limits, in_force, programs_in, run
from gitswarm.sandbox.copies import copies, refusal

BRANCH_TIMEOUT = 2400.0
RESOLVED, ALMOST_RESOLVED = 1.0, 0.95
REPORT = "eval/results.xml"
STATUSES = ("passed", "failure", "error", "skipped", "not_run")
_PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@dataclass(frozen=True)
class CaseResult:
    """One listed test's outcome (the harness's statuses: passed, failure, error, skipped, not_run)."""

    name: str
    branch: str
    status: str
    message: str = ""


@dataclass(frozen=True)
class ReproduceGrade:
    """The verdict on one candidate."""

    passed: int
    total: int
    results: list[CaseResult] = field(default_factory=list)
    error_code: str | None = None
    """Why nothing could be tested: no_compile_script, compile_failed, no_executable, reference_copy."""
    steps: list[Step] = field(default_factory=list)
    executable_hash: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def resolved(self) -> bool:
        return self.total > 0 and self.score >= RESOLVED

    @property
    def statuses(self) -> dict[str, int]:
        """How many expected tests ended in each status (every status named, zeros too)."""
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    @property
    def almost_resolved(self) -> bool:
        return self.total > 0 and self.score >= ALMOST_RESOLVED

    def as_dict(self) -> dict:
        return {"score": self.score, "passed": self.passed, "total": self.total, "resolved": self.resolved,
                "almost_resolved": self.almost_resolved, "statuses": self.statuses, **asdict(self)}


def tests_dir_of(problem: Problem) -> Path:
    """The problem's tests folder, or ReproduceGradingError."""
    if problem.tests_dir is None:
        raise ReproduceGradingError(f"{problem.id} has no tests folder to grade against")
    return problem.tests_dir


def suite_of(problem: Problem) -> Suite:
    """The problem's test suite, or ReproduceGradingError."""
    tests_dir = tests_dir_of(problem)
    try:
        return read_suite(tests_dir / SUITE_FILE)
    except SuiteError as exc:
        where = f"{tests_dir / SUITE_FILE}" + (f":{exc.line}" if exc.line else "")
        raise ReproduceGradingError(f"{where}: {exc.message}") from None


def branch_limits(timeout: float) -> Limits:
    return Limits(wall_seconds=timeout, cpu_seconds=int(timeout), memory_bytes=4 << 30,
                  file_bytes=256 << 20, max_processes=128, output_bytes=64 << 10)


def grade_reproduce(problem: Problem, candidate: Path | dict[str, bytes], *,
                    compile_timeout: float = COMPILE_TIMEOUT,
                    branch_timeout: float = BRANCH_TIMEOUT) -> ReproduceGrade:
    """Grade `candidate` (a folder, or files by relative path) against the problem's tests."""
    suite = suite_of(problem)
    with tempfile.TemporaryDirectory(prefix="gitswarm-reproduce-") as tmp, programs_in(problem.grading_image):
        scratch = Path(tmp)  # every program of the grading runs in the problem's grading image, if it has one
        if problem.grading_image:  # a container shows its image and the candidate's folder: no host copy to hide
            clean = {*problem.clean_hashes, reference_digest(problem, scratch / "reference", compile_timeout)}
            hide: tuple[Path, ...] = ()
        else:
            reference = reference_executable(problem, scratch / "reference", compile_timeout)
            clean = {*problem.clean_hashes, sha256(reference)}
            hide = hidden(problem, scratch, reference)
        tree = scratch / "submission"
        copy_candidate(candidate, tree)
        steps = [Step("clean", 0, 0.0, "\n".join(remove_clean(tree, clean) + remove_stale(tree)))]
        stash = scratch / "stash" / EXECUTABLE
        error = compile_tree(tree, clean, compile_timeout, steps, hide, stash)
        digest = None if error else sha256(stash.read_bytes())
        return run_suite(problem, suite, None if error else stash, scratch, branch_timeout, steps, error, hide,
                         digest)


def hidden(problem: Problem, scratch: Path, reference: bytes) -> tuple[Path, ...]:
    """What the candidate's build and program must not see: the problem set (the reference's
    source, every branch's tests), the reference built for the hash and the stashed build, and
    every copy of the reference the machine holds (`sandbox.copies`); ReproduceGradingError
    where such a copy exists and nothing can be hidden."""
    found = copies(reference, problem.executable, problem.origin)
    refused = refusal(problem.id, found, in_force())
    if refused:
        raise ReproduceGradingError(refused)
    return (problem.path.parent, scratch / "reference", scratch / "stash", *found)


def run_suite(problem: Problem, suite: Suite, stash: Path | None, scratch: Path,
              branch_timeout: float, steps: list[Step], error: str | None = None,
              hide: tuple[Path, ...] = (), digest: str | None = None) -> ReproduceGrade:
    """Run every counted branch against the executable at `stash` (None: nothing to run), whose
    sha256 recorded at the build is `digest`, and score it; a branch whose executable is not the
    one built counts its tests not_run."""
    results: list[CaseResult] = []
    warnings: list[str] = []
    for branch in suite.branches:
        if not branch.counted():
            continue
        executable = stash.read_bytes() if stash is not None and stash.is_file() else None
        mismatch = _mismatch(executable, digest) if stash is not None else None
        if executable is None or mismatch:
            why = error or ("executable_hash_mismatch" if mismatch else "no_executable")
            results += [CaseResult(t, branch.id, "not_run", why) for t in branch.counted()]
            if mismatch:
                steps.append(Step(f"verify_executable_hash {branch.id}", 1, 0.0, mismatch))
                warnings.append(f"branch {branch.id}: executable_hash_mismatch ({mismatch})")
            continue
        cases, step = run_branch(tests_dir_of(problem), branch, executable, scratch / f"branch-{branch.id}",
                                 branch_timeout, hide)
        steps.append(step)
        found, extra = _match(branch, cases)
        results += found
        if extra:
            warnings.append(f"branch {branch.id}: {extra} test(s) in the JUnit XML not in tests.json")
        if step.timed_out:
            warnings.append(f"branch {branch.id}: timed out after {branch_timeout:g} s")
    passed = sum(r.status == "passed" for r in results)
    return ReproduceGrade(passed, suite.total, results, error, steps, digest, warnings)


def _mismatch(executable: bytes | None, digest: str | None) -> str | None:
    """Why the executable about to be tested is not the one built (None: it is)."""
    found = sha256(executable) if executable is not None else "nothing"
    return None if digest is not None and found == digest else f"expected {digest}, got {found}"


def run_branch(tests_dir: Path, branch: Branch, executable: bytes, work: Path,
               timeout: float = BRANCH_TIMEOUT, hide: tuple[Path, ...] = ()) -> tuple[list[Case], Step]:
    """Run one branch's tests in `work` (its files plus `./executable`); the JUnit cases."""
    shutil.copytree(tests_dir / branch.id, work, symlinks=True)
    (work / EXECUTABLE).unlink(missing_ok=True)
    (work / EXECUTABLE).write_bytes(executable)
    (work / EXECUTABLE).chmod(0o755)
    (work / REPORT).unlink(missing_ok=True)
    argv = [sys.executable, "-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir=.",
            f"--junitxml={REPORT}", "-o", "junit_family=xunit1", "eval/tests"]
    result = run(argv, workdir=work, limits=branch_limits(timeout), env=_PYTEST_ENV, hide=hide,
                 packages=("pytest",))
    report = work / REPORT
    cases = (read_cases(report.read_bytes()) or []) if report.is_file() else []
    return cases, step_of(f"run_tests {branch.id}", result)


def _match(branch: Branch, cases: list[Case]) -> tuple[list[CaseResult], int]:
    """Each counted test's result, and how many reported cases match no listed test."""
    by_name = {canonical(c.name): c for c in cases}
    listed = {canonical(t) for t in branch.tests}
    results = []
    for test in branch.counted():
        case = by_name.get(canonical(test))
        results.append(CaseResult(test, branch.id, case.status, case.message) if case else
                       CaseResult(test, branch.id, "not_run", "missing_from_junit_xml"))
    return results, sum(name not in listed for name in by_name)


def details(grade: ReproduceGrade) -> dict:
    """What a stored grade keeps: the counts, the verdicts, the first failures, the log's tail."""
    failures = [{"test": r.name, "branch": r.branch, "status": r.status, "message": r.message[:300]}
                for r in grade.results if r.status != "passed"][:20]
    return {"passed": grade.passed, "total": grade.total, "resolved": grade.resolved,
            "almost_resolved": grade.almost_resolved, "error_code": grade.error_code,
            "executable_hash": grade.executable_hash, "statuses": grade.statuses, "warnings": grade.warnings,
            "failures": failures,
            "steps": [{"step": s.step, "returncode": s.returncode, "seconds": s.seconds,
                       "timed_out": s.timed_out} for s in grade.steps]}


def mean_score(scores: Mapping[str, float | None], problems: list[str]) -> float:
    """A set's mean score: every problem counts, an unattempted or ungraded one as 0."""
    if not problems:
        return 0.0
    return sum(scores.get(p) or 0.0 for p in problems) / len(problems)
