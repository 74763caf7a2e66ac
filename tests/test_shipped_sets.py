"""The problem sets shipped with gitswarm: clean, and program tasks that can be graded."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitswarm.problems.loader import check_set, load_set
from gitswarm.problems.model import Kind
from gitswarm.resources import data_dir, resolve_set

SETS = ["imo", "answers", "programs", "reproduce", "demo"]


@pytest.mark.parametrize("name", SETS)
def test_shipped_set_has_no_defects(name: str):
    problem_set, defects = check_set(resolve_set(name))
    assert defects == []
    assert all(p.source for p in problem_set.problems)


def test_sizes_promised_by_the_readme():
    imo = load_set(data_dir("problems") / "imo").problems
    assert len([p for p in imo if p.id.startswith("imo-2025-")]) == 6 and len(imo) >= 10
    assert all(p.grading and p.kind is Kind.PROOF for p in imo)
    assert len(load_set(data_dir("problems") / "answers").problems) >= 15
    programs = load_set(data_dir("problems") / "programs").problems
    assert len(programs) >= 5
    reproduce = load_set(data_dir("problems") / "reproduce").problems
    assert reproduce and all(p.kind is Kind.REPRODUCE and p.build for p in reproduce)
    # the demo set shows every kind, reproduce (a code worker at its shell) included
    assert {p.kind for p in load_set(data_dir("problems") / "demo").problems} == set(Kind)


def run_hidden_tests(problem, code_dir: Path, tmp_path: Path) -> int:
    work = tmp_path / f"{problem.id}-{code_dir.name}"
    shutil.copytree(code_dir, work)
    shutil.copytree(problem.tests_dir, work / "hidden_tests")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "hidden_tests"], cwd=work, capture_output=True, text=True, timeout=120)
    return done.returncode


def program_problems():
    return [p for name in ("programs", "demo") for p in load_set(resolve_set(name)).problems
            if p.kind is Kind.PROGRAM]


@pytest.mark.slow
@pytest.mark.parametrize("problem", program_problems(), ids=lambda p: p.id)
def test_reference_passes_and_starter_fails_the_hidden_tests(problem, tmp_path: Path):
    assert problem.reference_dir and problem.starter_dir
    assert run_hidden_tests(problem, problem.reference_dir, tmp_path) == 0
    assert run_hidden_tests(problem, problem.starter_dir, tmp_path) != 0


def reproduce_problems():
    return [p for p in load_set(resolve_set("reproduce")).problems]


@pytest.mark.slow
@pytest.mark.parametrize("problem", reproduce_problems(), ids=lambda p: p.id)
def test_reproduce_problems_check_and_grade(problem, tmp_path: Path):
    """Each reproduce problem: 40+ counted tests, its reference passes them all and an empty
    program none; its source built another way scores 1, a compile.sh alone scores 0."""
    from gitswarm.referee.reproduce import grade_reproduce, suite_of
    from gitswarm.referee.reproduce_check import check_problem

    assert suite_of(problem).total >= 40
    assert check_problem(problem) == []
    rebuilt = {p.name: p.read_bytes() for p in problem.reference_dir.iterdir() if p.is_file()}
    build = problem.build.replace("-O2", "-O0")
    rebuilt["compile.sh"] = f"#!/bin/sh\n{build} && mv {problem.executable} executable\n".encode()
    assert grade_reproduce(problem, rebuilt).score == 1.0
    assert grade_reproduce(problem, {"compile.sh": b"#!/bin/sh\nprintf '#!/bin/sh\\n' > executable\n"}).score == 0.0


@pytest.mark.slow
def test_a_partial_tally_scores_between_0_and_1():
    """tally without -w (the reference with the letter refused as an unknown option) passes
    every test but the ten that pass -w, alone or with other letters: 39 of 49."""
    from gitswarm.referee.reproduce import grade_reproduce

    tally = load_set(resolve_set("reproduce")).get("tally")
    source = (tally.reference_dir / "tally.c").read_text(encoding="utf-8")
    without_words = source.replace("case 'w': want_words = 1; break;\n", "")
    assert without_words != source
    grade = grade_reproduce(tally, {
        "tally.c": without_words.encode(),
        "compile.sh": b"#!/bin/sh\ncc -std=c99 -O1 -o executable tally.c\n",
    })
    assert grade.error_code is None
    assert (grade.passed, grade.total) == (39, 49) and 0 < grade.score < 1
    failed = {r.name.split(".")[-1] for r in grade.results if r.status != "passed"}
    assert "test_selected_counts[words]" in failed and "test_selected_counts[lines]" not in failed
