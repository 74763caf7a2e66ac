"""ProgramBench's official `eval.py`, rule by rule: each test is named after the rule it holds
gitswarm's grading to. Real sets (the calculator fixture), the real sandbox, real pytest.

The rules (eval.py's Evaluator): hashed files removed before the build; a stale
./executable removed before compile.sh; compile.sh bounded by 900 s and each branch's tests
by 2,400 s; the executable's sha256 recorded, and checked before each test branch; every
expected test that did not run is `not_run`, a failure, never left out; skipped is not
passed; score = passed / expected; resolved = a score of 1.0.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from reproduce_fixture import BRANCH, CORRECT, TESTS_JSON, reproduce_set, write
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import GradeConfig
from gitswarm.problems.loader import load_set
from gitswarm.referee.builds import COMPILE_TIMEOUT
from gitswarm.referee.reproduce import (
    BRANCH_TIMEOUT,
    grade_reproduce,
    hidden,
    run_suite,
    sha256,
    suite_of,
)
from gitswarm.referee.submission import EXECUTABLE, compile_tree
from gitswarm.sandbox import containment

pytestmark = pytest.mark.skipif(containment().backend is None, reason=(
    "no sandbox backend on this machine (bubblewrap or namespaces): candidates cannot be built"))
runner = CliRunner()
ADDS_ONLY = {**CORRECT, "calculator.sh": '#!/bin/sh\n[ "$2" = + ] && echo $(($1 + $3))\n'}
"""A partial rebuild: addition right, subtraction and multiplication wrong."""


@pytest.fixture
def calc(tmp_path: Path):
    return load_set(reproduce_set(tmp_path / "set")).get("calc")


def test_rule_hashed_files_are_removed_before_the_build(tmp_path: Path) -> None:
    folder = reproduce_set(tmp_path / "set")
    digest = sha256(CORRECT["calculator.sh"].encode())
    text = (folder / "calc.md").read_text().replace("build:", f"eval_clean_hashes: [{digest}]\nbuild:")
    (folder / "calc.md").write_text(text)
    grade = grade_reproduce(load_set(folder).get("calc"), write(tmp_path / "c", CORRECT))
    assert "removed calculator.sh (a clean hash)" in grade.steps[0].output
    assert (grade.score, grade.error_code) == (0.0, "compile_failed")


def test_rule_a_stale_executable_is_removed_before_compile_sh(tmp_path: Path, calc) -> None:
    prebuilt = {"executable": CORRECT["calculator.sh"], "compile.sh": "#!/bin/sh\ntrue\n"}
    grade = grade_reproduce(calc, write(tmp_path / "prebuilt", prebuilt))
    assert "removed executable (a stale build: compile.sh must make it)" in grade.steps[0].output
    assert (grade.score, grade.error_code, grade.statuses["not_run"]) == (0.0, "no_executable", 3)
    rebuilt = {**CORRECT, "executable": "#!/bin/sh\necho stale\n"}  # compile.sh makes it again: fine
    assert grade_reproduce(calc, write(tmp_path / "rebuilt", rebuilt)).score == 1.0


def test_rule_compile_sh_is_bounded_by_900_seconds_unless_set(tmp_path: Path, calc, monkeypatch) -> None:
    assert COMPILE_TIMEOUT == GradeConfig().compile_timeout == 900.0
    config = write(tmp_path / "conf", {"gitswarm.toml": "[grade]\ncompile_timeout = 2\n"}) / "gitswarm.toml"
    monkeypatch.setenv("GITSWARM_CONFIG", str(config))
    hang = write(tmp_path / "hang", {"compile.sh": "#!/bin/sh\nsleep 300\n"})
    started = time.monotonic()
    result = runner.invoke(app, ["grade", "--candidate", str(hang), "--set", str(calc.path.parent),
                                 "--problem", "calc", "--json"])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 60
    graded = json.loads(result.stdout)
    assert graded["error_code"] == "compile_failed"
    assert [s["timed_out"] for s in graded["steps"] if s["step"] == "compile"] == [True]


def test_rule_each_branch_is_bounded_by_2400_seconds_unless_set(tmp_path: Path) -> None:
    assert BRANCH_TIMEOUT == GradeConfig().branch_timeout == 2400.0
    slow = {"test_calculator.py": "import time\n\ndef test_addition():\n    time.sleep(300)\n"}
    folder = reproduce_set(tmp_path / "set", tests=slow)
    result = runner.invoke(app, ["grade", "--candidate", str(write(tmp_path / "c", CORRECT)), "--set",
                                 str(folder), "--problem", "calc", "--branch-timeout", "3", "--json"])
    assert result.exit_code == 0, result.output
    graded = json.loads(result.stdout)
    assert graded["passed"] == 0 and any("timed out after 3 s" in w for w in graded["warnings"])


def test_rule_the_executables_sha256_is_recorded_in_the_grade(tmp_path: Path, calc) -> None:
    grade = grade_reproduce(calc, write(tmp_path / "c", CORRECT))
    assert grade.executable_hash == sha256(CORRECT["calculator.sh"].encode())
    result = runner.invoke(app, ["grade", "--candidate", str(tmp_path / "c"), "--set", str(calc.path.parent),
                                 "--problem", "calc"])
    assert f"executable sha256 {grade.executable_hash}" in result.stdout


def test_rule_the_executables_sha256_is_checked_before_each_branch(tmp_path: Path) -> None:
    """An executable swapped after the build (here: the stash rewritten between the build and
    the tests) runs no test: every branch's tests are not_run, executable_hash_mismatch."""
    listing = json.loads(TESTS_JSON)
    listing["branches"]["second"] = listing["branches"][BRANCH]
    folder = reproduce_set(tmp_path / "set", tests_json=json.dumps(listing))
    shutil.copytree(folder / "calc" / "tests" / BRANCH, folder / "calc" / "tests" / "second")
    problem = load_set(folder).get("calc")
    tree, stash = write(tmp_path / "tree", CORRECT), tmp_path / "stash" / EXECUTABLE
    hide = hidden(problem, tmp_path, b"")
    steps: list = []
    assert compile_tree(tree, set(), 60, steps, hide, stash) is None
    built = sha256(stash.read_bytes())
    untouched = run_suite(problem, suite_of(problem), stash, tmp_path / "a", 60, list(steps), None, hide, built)
    assert (untouched.passed, untouched.total) == (6, 6)
    stash.write_bytes(b"#!/bin/sh\n# swapped\necho $(($1 $2 $3))\n")  # the same behaviour, another file
    swapped = run_suite(problem, suite_of(problem), stash, tmp_path / "b", 60, steps, None, hide, built)
    assert (swapped.passed, swapped.score, swapped.executable_hash) == (0, 0.0, built)
    assert {(r.status, r.message) for r in swapped.results} == {("not_run", "executable_hash_mismatch")}
    checks = [s.step for s in swapped.steps if s.step.startswith("verify_executable_hash")]
    assert checks == [f"verify_executable_hash {BRANCH}", "verify_executable_hash second"]
    assert sum("executable_hash_mismatch" in w for w in swapped.warnings) == 2


def test_rule_expected_tests_that_did_not_run_are_not_run_and_count_against(tmp_path: Path) -> None:
    listing = json.loads(TESTS_JSON)
    listing["branches"][BRANCH]["tests"].append("tests.test_calculator.test_division")  # in no test file
    problem = load_set(reproduce_set(tmp_path / "set", tests_json=json.dumps(listing))).get("calc")
    grade = grade_reproduce(problem, write(tmp_path / "c", CORRECT))
    assert (grade.passed, grade.total, grade.statuses["not_run"]) == (3, 4, 1)
    assert [r.message for r in grade.results if r.status == "not_run"] == ["missing_from_junit_xml"]
    nothing = grade_reproduce(problem, write(tmp_path / "none", {"compile.sh": "#!/bin/sh\nexit 1\n"}))
    assert (nothing.total, nothing.statuses["not_run"], nothing.error_code) == (4, 4, "compile_failed")


def test_rule_skipped_is_not_passed(tmp_path: Path) -> None:
    skips = "import pytest\n\ndef test_addition():\n    pytest.skip('later')\n\n" \
            "def test_subtraction():\n    pass\n\ndef test_multiplication():\n    pass\n"
    problem = load_set(reproduce_set(tmp_path / "set", tests={"test_calculator.py": skips})).get("calc")
    grade = grade_reproduce(problem, write(tmp_path / "c", CORRECT))
    assert (grade.passed, grade.statuses["skipped"], grade.resolved) == (2, 1, False)


def test_rule_score_is_passed_over_expected_and_resolved_is_a_score_of_1(tmp_path: Path, calc) -> None:
    partial = grade_reproduce(calc, write(tmp_path / "partial", ADDS_ONLY))
    assert (partial.passed, partial.total, partial.statuses["failure"]) == (1, 3, 2)
    assert partial.score == pytest.approx(1 / 3) and not partial.resolved and not partial.almost_resolved
    whole = grade_reproduce(calc, write(tmp_path / "whole", CORRECT))
    assert (whole.score, whole.resolved) == (1.0, True)
