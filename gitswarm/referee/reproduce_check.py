"""Check a reproduce problem by running it: the reference builds, passes every counted test,
and an empty program passes none.

The empty program is `./executable` that prints nothing and exits 0. A problem with an image
runs both in it: the reference as the image's own `./executable` (`image_runs`), the empty
program in the grading image. A counted test it
passes is reported as ProgramBench's `dummy_pass` (such a test measures nothing); a counted
test the reference fails as `gold_fail`. Either is fixed in the test, or by listing the test
under the branch's `ignored_tests` with that reason. Each defect names the test file and
the line of the test (from pytest's report), tests.json and a branch's line, or the problem
file and its `build` line.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gitswarm.problems import frontmatter
from gitswarm.problems.loader import Defect
from gitswarm.problems.model import Problem
from gitswarm.problems.suite import SUITE_FILE, Branch, canonical
from gitswarm.referee.builds import COMPILE_TIMEOUT, build_reference
from gitswarm.referee.image_runs import run_branch_in_image
from gitswarm.referee.junit import Case
from gitswarm.referee.reproduce import BRANCH_TIMEOUT, branch_limits, run_branch, suite_of, tests_dir_of
from gitswarm.sandbox import programs_in

EMPTY_PROGRAM = b"#!/bin/sh\nexit 0\n"


def check_problem(problem: Problem, *, compile_timeout: float = COMPILE_TIMEOUT,
                  branch_timeout: float = BRANCH_TIMEOUT) -> list[Defect]:
    """Every defect found by building the reference and running the tests twice."""
    suite, tests_dir = suite_of(problem), tests_dir_of(problem)
    branches = [b for b in suite.branches if b.counted()]
    with tempfile.TemporaryDirectory(prefix="gitswarm-check-") as tmp, programs_in(problem.grading_image):
        scratch = Path(tmp)  # in the problem's grading image, where it names one
        defects: list[Defect] = []
        if problem.reference_in_image:  # the image's own ./executable, run in the image
            for branch in branches:
                cases, _ = run_branch_in_image(problem, tests_dir, branch, branch_limits(branch_timeout))
                defects += _gold(problem, branch, cases)
        else:
            built, step = build_reference(problem, scratch / "reference", compile_timeout)
            if built is None:
                why = "timed out" if step.timed_out else f"exit {step.returncode}"
                output = " ".join(step.output[-300:].split()) or "no output"
                return [Defect(problem.path, f"the reference does not build ({why}: {output}): fix its "
                               "source or the 'build' command", _key_line(problem.path, "build"))]
            for branch in branches:
                cases, _ = run_branch(tests_dir, branch, built, scratch / f"gold-{branch.id}",
                                      branch_timeout)
                defects += _gold(problem, branch, cases)
        for branch in branches:
            cases, _ = run_branch(tests_dir, branch, EMPTY_PROGRAM, scratch / f"dummy-{branch.id}",
                                  branch_timeout)
            defects += _dummy(problem, branch, cases)
    return defects


def _gold(problem: Problem, branch: Branch, cases: list[Case]) -> list[Defect]:
    """The reference must pass every counted test, and pytest must report each one."""
    by_name = {canonical(c.name): c for c in cases}
    defects = []
    for test in branch.counted():
        case = by_name.get(canonical(test))
        if case is None:
            defects.append(Defect(tests_dir_of(problem) / SUITE_FILE, f"branch {branch.id}: {test} is listed but "
                                  "pytest did not report it (a typo, or a test that was not collected)",
                                  branch.line))
        elif case.status != "passed":
            message = " ".join(case.message.split())[:200]
            defects.append(Defect(_file(problem, branch, case), f"the reference fails {test} ({case.status}"
                                  f"{': ' + message if message else ''}) (gold_fail): fix the test, or "
                                  "list it under ignored_tests in tests.json", case.line))
    return defects


def _dummy(problem: Problem, branch: Branch, cases: list[Case]) -> list[Defect]:
    """No counted test may pass for an empty program."""
    counted = {canonical(t) for t in branch.counted()}
    return [Defect(_file(problem, branch, case), f"{case.name} passes for an empty program (dummy_pass): "
                   "make it check the program's output, or list it under ignored_tests in tests.json",
                   case.line)
            for case in cases if case.status == "passed" and canonical(case.name) in counted]


def _file(problem: Problem, branch: Branch, case: Case) -> Path:
    folder = tests_dir_of(problem) / branch.id
    return folder / case.file if case.file else folder


def _key_line(path: Path, key: str) -> int | None:
    try:
        return frontmatter.split(path.read_text(encoding="utf-8")).key_lines.get(key)
    except (OSError, UnicodeDecodeError, frontmatter.FrontMatterError):
        return None
