"""Grading reproduce candidates as ProgramBench does: real compile.sh, real sandbox, real pytest.

The calculator fixture is scored as the shared harness outputs say (3/3 and 0/3); a copied
reference scores 0; a compile.sh that hangs or forks is contained and leaves nothing
running; grades of a run are stored and a set's mean is printed.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from reproduce_fixture import (
    BRANCH,
    CALCULATOR,
    CORRECT,
    INCORRECT,
    NAMES,
    SHARED,
    TESTS_JSON,
    compile_reference,
    reproduce_set,
    task_dir,
    write,
)
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.memory import trees
from gitswarm.memory.repo import Memory
from gitswarm.memory.write import committer
from gitswarm.problems.frontmatter import render
from gitswarm.problems.loader import load_set
from gitswarm.problems.programbench import import_task
from gitswarm.referee.grades import GradeStore
from gitswarm.referee.reproduce import grade_reproduce, mean_score, sha256

runner = CliRunner()


@pytest.fixture
def calc(tmp_path: Path):
    """The hand-written set: the C reference as source, built by its `build` command."""
    return load_set(reproduce_set(tmp_path / "set")).get("calc")


def harness(kind: str) -> dict[str, str]:
    """The shared harness output's status for each test, by its JUnit (eval.) name."""
    path = SHARED / "eval-results" / f"{kind}.testorg__calculator.eval.json"
    if not path.exists():
        pytest.skip(f"ProgramBench data not present: {path}")
    results = json.loads(path.read_text())["test_results"]
    return {r["name"]: r["status"] for r in results if r["name"].startswith("eval.")}


@pytest.mark.needs_data
@pytest.mark.parametrize("kind", ["correct", "incorrect"])
def test_the_calculator_fixture_scores_as_the_harness_says(tmp_path: Path, kind: str) -> None:
    expected = harness(kind)
    if not (SHARED / "tasks" / CALCULATOR).is_dir():
        pytest.skip("ProgramBench tasks not present")
    reference = compile_reference(tmp_path / "ref")
    docs = write(tmp_path / "docs", {"README.md": "calculator A OP B\n"})
    imported = import_task(task_dir(tmp_path / "tasks"), reference, docs, tmp_path / "set")
    problem = load_set(tmp_path / "set").get(CALCULATOR)
    grade = grade_reproduce(problem, write(tmp_path / kind, CORRECT if kind == "correct" else INCORRECT))
    assert imported.without_code == []
    ours = {f"eval.{r.name}": r.status for r in grade.results}
    assert ours == expected
    passed = sum(s == "passed" for s in expected.values())
    assert (grade.passed, grade.total) == (passed, 3) == ((3, 3) if kind == "correct" else (0, 3))
    assert grade.resolved is (kind == "correct")
    assert grade.executable_hash == sha256((tmp_path / kind / "calculator.sh").read_bytes())


def test_a_copied_reference_scores_nothing(tmp_path: Path, calc) -> None:
    built = compile_reference(tmp_path / "ref").read_bytes()
    copied = write(tmp_path / "copy", {"calculator": built, "compile.sh": "#!/bin/sh\ncp calculator executable\n"})
    grade = grade_reproduce(calc, copied)
    assert (grade.score, grade.error_code) == (0.0, "compile_failed")
    assert "removed calculator (a clean hash)" in grade.steps[0].output
    hidden = write(tmp_path / "hidden", {"blob.b64": base64.b64encode(built).decode(),
                                         "compile.sh": "#!/bin/sh\nbase64 -d blob.b64 > executable\n"})
    grade = grade_reproduce(calc, hidden)
    assert (grade.score, grade.error_code) == (0.0, "reference_copy")


def test_the_build_cannot_read_the_reference_source_or_other_tests(tmp_path: Path, calc) -> None:
    source = calc.reference_dir / "calc.c"
    steal = write(tmp_path / "steal", {"compile.sh": f"#!/bin/sh\ncc -O2 -o executable {source}\n"})
    grade = grade_reproduce(calc, steal)
    assert (grade.score, grade.error_code) == (0.0, "compile_failed")
    peek = write(tmp_path / "peek", {"compile.sh": f"#!/bin/sh\nls {calc.tests_dir}\n"})
    grade = grade_reproduce(calc, peek)
    assert grade.error_code == "compile_failed" and grade.steps[-1].step == "compile"
    assert "tests.json" not in grade.steps[-1].output and "ls:" in grade.steps[-1].output


def test_eval_clean_hashes_are_removed_before_compiling(tmp_path: Path) -> None:
    folder = reproduce_set(tmp_path / "set")
    digest = sha256(CORRECT["calculator.sh"].encode())
    text = (folder / "calc.md").read_text().replace("build:", f"eval_clean_hashes: [{digest}]\nbuild:")
    (folder / "calc.md").write_text(text)
    grade = grade_reproduce(load_set(folder).get("calc"), write(tmp_path / "c", CORRECT))
    assert (grade.passed, grade.error_code) == (0, "compile_failed")


def test_missing_compile_script_and_executable(tmp_path: Path, calc) -> None:
    assert grade_reproduce(calc, write(tmp_path / "a", {"x.c": "int main;"})).error_code == "no_compile_script"
    grade = grade_reproduce(calc, write(tmp_path / "b", {"compile.sh": "#!/bin/sh\ntrue\n"}))
    assert (grade.error_code, [r.status for r in grade.results]) == ("no_executable", ["not_run"] * 3)


def _alive(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if marker.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_hanging_compile_is_cut_off_and_leaves_nothing_running(tmp_path: Path, calc) -> None:
    marker = f"gitswarm-hang-{os.getpid()}"
    hang = write(tmp_path / "hang", {"compile.sh": f"#!/bin/sh\nsh -c 'sleep 300; : {marker}' &\n"
                                                   f"exec sh -c 'sleep 300; : {marker}'\n"})
    started = time.monotonic()
    grade = grade_reproduce(calc, hang, compile_timeout=2)
    assert time.monotonic() - started < 30
    assert (grade.score, grade.error_code) == (0.0, "compile_failed")
    assert [s.timed_out for s in grade.steps if s.step == "compile"] == [True]
    assert _alive(marker) == []


def test_daemons_a_compile_leaves_behind_are_killed(tmp_path: Path, calc) -> None:
    marker = f"gitswarm-fork-{os.getpid()}"
    forks = dict(CORRECT, **{"compile.sh": f"#!/bin/sh\nsetsid sh -c 'sleep 300; : {marker}' &\n"
                                           f"(sh -c 'sleep 300; : {marker}' &)\n"
                                           + CORRECT["compile.sh"].split("\n", 1)[1]})
    grade = grade_reproduce(calc, write(tmp_path / "fork", forks))
    assert grade.passed == 3
    assert _alive(marker) == []


def test_a_test_branch_that_hangs_is_bounded(tmp_path: Path) -> None:
    slow = {"test_calculator.py": "import time\n\ndef test_addition():\n    time.sleep(300)\n"}
    problem = load_set(reproduce_set(tmp_path / "set", tests=slow)).get("calc")
    grade = grade_reproduce(problem, write(tmp_path / "c", CORRECT), branch_timeout=3)
    assert grade.passed == 0 and grade.total == 3
    assert any("timed out" in w for w in grade.warnings)


def test_ignored_tests_and_names_with_or_without_eval(tmp_path: Path) -> None:
    listing = json.loads(TESTS_JSON)
    branch = listing["branches"][BRANCH]
    branch["tests"][0] = "eval." + branch["tests"][0]
    branch["ignored_tests"] = [{"name": branch["tests"][2], "reasons": [{"id": "gold_fail"}]}]
    problem = load_set(reproduce_set(tmp_path / "set", tests_json=json.dumps(listing))).get("calc")
    grade = grade_reproduce(problem, write(tmp_path / "c", CORRECT))
    assert (grade.passed, grade.total) == (2, 2)
    assert [r.name.rsplit(".", 1)[1] for r in grade.results] == list(NAMES[:2])


def test_mean_score_counts_unattempted_as_zero() -> None:
    assert mean_score({"a": 1.0, "b": 0.5, "c": None}, ["a", "b", "c", "d"]) == pytest.approx(0.375)


def test_gitswarm_grade_a_folder_outside_any_run(tmp_path: Path) -> None:
    folder = reproduce_set(tmp_path / "set")
    good = write(tmp_path / "good", CORRECT)
    result = runner.invoke(app, ["grade", "--candidate", str(good), "--set", str(folder), "--problem", "calc",
                                 "--json"])
    assert result.exit_code == 0, result.output
    graded = json.loads(result.stdout)
    assert (graded["score"], graded["resolved"], graded["almost_resolved"]) == (1.0, True, True)
    result = runner.invoke(app, ["grade", "--candidate", str(write(tmp_path / "bad", INCORRECT)),
                                 "--set", str(folder), "--problem", "calc"])
    assert result.exit_code == 0 and "calc: 0/3 tests passed, score 0.000 (not resolved)" in result.stdout
    result = runner.invoke(app, ["grade", "--candidate", str(good), "--set", str(folder)])
    assert result.exit_code == 2 and result.stderr.startswith("gitswarm: --candidate needs")


def test_grades_of_a_run_are_stored_with_the_mean(tmp_path: Path) -> None:
    folder = reproduce_set(tmp_path / "set")
    memory = Memory.create(tmp_path / "run", load_set(folder), run_id="reproduce-run")
    written = memory.contribute(Contribution(
        problem="calc", episode="e1", worker="w01", kind="code", title="calculator",
        files={f"code/calc/{k}": v for k, v in CORRECT.items()}, parent=memory.main(), op="op-e1"))
    memory.compose()
    text = render({"problem": "calc", "candidate": written.commit, "path": "problems/calc/code/calc",
                   "nominations": 2}, "Program files in `code/calc/`")
    repo = memory.repo
    tip = repo[repo.references["refs/heads/main"].target]
    tree = trees.update(repo, tip.tree, trees.blobs(repo, {"problems/calc/SOLUTION.md": text.encode()}))
    repo.create_commit("refs/heads/main", committer(), committer(), "solution(calc)\n", tree, [tip.id])
    result = runner.invoke(app, ["grade", str(tmp_path / "run"), "--set", str(folder)])
    assert result.exit_code == 0, result.output
    assert "1.00 (3/3 tests)" in result.stdout
    assert "reproduce: mean score 1.000 over 1 problem(s) (resolved 1, almost resolved 1" in result.stdout
    everything = subprocess.run(["git", "-C", str(tmp_path / "run"), "log", "-p", "--all"], capture_output=True,
                                text=True, check=True).stdout
    assert all(text not in everything for text in load_set(folder).get("calc").hidden_texts())
    stored = GradeStore(Memory(tmp_path / "run")).for_problem("calc")
    assert [(g.grader, g.score, g.details["resolved"]) for g in stored] == [("reproduce", 1.0, True)]
    statuses = ("passed 3, failure 0, error 0, skipped 0, not_run 0; executable sha256 "
                + sha256(CORRECT["calculator.sh"].encode()))
    shown = runner.invoke(app, ["show", str(tmp_path / "run"), "calc"])
    assert shown.exit_code == 0 and f"  tests: {statuses}" in shown.stdout, shown.output
    report = runner.invoke(app, ["report", str(tmp_path / "run"), "-f", "md"])
    assert report.exit_code == 0 and f"(grader reproduce; {statuses})" in report.stdout, report.output
