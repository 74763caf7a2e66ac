"""What grading a reproduce candidate costs, against running its tests directly.

Both sides work on the same tree: the calculator fixture of the tests (a C reference, built
by its `build` command) with `--tests` generated tests over two branches, and a correct
candidate (`compile.sh` copying a shell script to `./executable`).

- graded: `referee.reproduce.grade_reproduce` (fresh copies, clean hashes, compile.sh and
  each branch in the sandbox, JUnit XML, scoring). The reference is built on the first call
  and cached for the process; that first call is reported apart.
- direct: the same compile.sh, then plain `python -m pytest -q eval/tests` in each branch
  folder with `./executable` beside it, as a developer would run them, without a sandbox.
  Plain pytest loads every installed plugin, which the grader does not
  (PYTEST_DISABLE_PLUGIN_AUTOLOAD); so it is also run with autoloading off ("direct, same
  pytest"), and the ratio to that is the cost of the sandbox, copies and scoring alone.

Each is run `--repeat` times, interleaved; the medians and their ratio are printed.

    python scripts/bench_grading.py [--tests 40] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reproduce_fixture import CORRECT, reproduce_set, write

from gitswarm.problems.loader import load_set
from gitswarm.referee.reproduce import grade_reproduce

BRANCHES = ("aaaaaaaaaaa1", "bbbbbbbbbbb2")
HEADER = ("import subprocess\n\n\ndef _run(a, op, b):\n    return subprocess.run(['./executable', str(a), op, "
          "str(b)], capture_output=True, text=True, timeout=20).stdout.strip()\n")


def tests_of(count: int, offset: int) -> str:
    """`count` tests, each one call of the executable."""
    cases = [f"\n\ndef test_add_{i}():\n    assert _run({i}, '+', {offset}) == '{i + offset}'\n" for i in range(count)]
    return HEADER + "".join(cases)


def make_set(root: Path, tests: int) -> Path:
    """The calculator set with `tests` tests split over two branches."""
    half = tests // 2
    listing = {"branches": {b: {"ignored": False, "ignore_reason": "", "ignored_tests": [],
                                "tests": [f"eval.tests.test_calc.test_add_{i}" for i in range(n)]}
                            for b, n in zip(BRANCHES, (half, tests - half), strict=True)}}
    folder = reproduce_set(root / "set", tests_json=json.dumps(listing, indent=2))
    for number, (branch, n) in enumerate(zip(BRANCHES, (half, tests - half), strict=True)):
        write(folder / "calc" / "tests" / branch / "eval" / "tests", {"test_calc.py": tests_of(n, number)})
    shutil.rmtree(folder / "calc" / "tests" / "33128f6b8600")
    return folder


def direct(problem, candidate: Path, scratch: Path, autoload: bool = True) -> float:
    """compile.sh, then plain pytest in each branch folder; the seconds it took."""
    env = dict(os.environ, **({} if autoload else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}))
    started = time.perf_counter()
    tree = scratch / "tree"
    shutil.copytree(candidate, tree)
    subprocess.run(["/bin/sh", "-c", "chmod +x ./compile.sh && ./compile.sh"], cwd=tree, check=True)
    for branch in BRANCHES:
        work = scratch / branch
        shutil.copytree(problem.tests_dir / branch, work)
        shutil.copy2(tree / "executable", work / "executable")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "eval/tests"],
                       cwd=work, check=True, capture_output=True, env=env)
    seconds = time.perf_counter() - started
    shutil.rmtree(scratch)
    return seconds


def graded(problem, candidate: Path) -> float:
    started = time.perf_counter()
    grade = grade_reproduce(problem, candidate)
    seconds = time.perf_counter() - started
    assert grade.resolved, grade.as_dict()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tests", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitswarm-bench-grading-") as tmp:
        root = Path(tmp)
        problem = load_set(make_set(root, args.tests)).get("calc")
        candidate = write(root / "candidate", CORRECT)
        cold = graded(problem, candidate)
        ours, theirs, same = [], [], []
        for i in range(args.repeat):
            theirs.append(direct(problem, candidate, root / f"direct-{i}"))
            same.append(direct(problem, candidate, root / f"same-{i}", autoload=False))
            ours.append(graded(problem, candidate))
    g, d, s = statistics.median(ours), statistics.median(theirs), statistics.median(same)
    print(f"reproduce grading, {args.tests} tests over {len(BRANCHES)} branches, median of {args.repeat}:")
    print(f"  graded (sandbox, fresh copies, JUnit, score)   {g * 1000:8.1f} ms")
    print(f"  direct (compile.sh + plain pytest, same tree)  {d * 1000:8.1f} ms")
    print(f"  direct, same pytest (no plugin autoloading)    {s * 1000:8.1f} ms")
    print(f"  first grade, reference built                   {cold * 1000:8.1f} ms")
    print(f"  ratio graded / direct                          {g / d:8.2f}x")
    print(f"  ratio graded / direct, same pytest             {g / s:8.2f}x")


if __name__ == "__main__":
    main()
