"""What the root made for each program costs: compile.sh plus the hidden tests of the demo's
reproduce problem (demo-shout), under each sandbox backend and under the old way, in one run.

- old: the sandbox before the root was made for the program (`gitswarm/sandbox/` as of
  `--old`, default 08ce2cf: the host's filesystem with a deny-list of hidden folders, a
  private /tmp, a mount and network namespace), loaded from git into a temporary package;
- bwrap, namespaces: today's sandbox with `GITSWARM_SANDBOX` set to that one backend.

The candidate is the reference's own source with a `compile.sh` (`cc -O2 -o executable
shout.c`); one sample is `referee.submission.compile_tree` then `run_branch` for each counted
branch, the calls `grade_reproduce` makes. Samples are interleaved over `--repeat` rounds;
the medians and their ratios to the old way are printed.

    python scripts/bench_sandbox.py [--repeat 7] [--old COMMIT]
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gitswarm.problems.loader import load_set
from gitswarm.referee import reproduce, submission
from gitswarm.resources import resolve_set
from gitswarm.sandbox import containment

ROOT = Path(__file__).resolve().parents[1]


def old_sandbox(commit: str, into: Path):
    """`gitswarm/sandbox/` as of `commit`, importable as the package `oldsandbox`."""
    package = into / "oldsandbox"
    package.mkdir()
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{commit}:gitswarm/sandbox"],
                           check=True, capture_output=True, text=True).stdout.split()
    for name in (n for n in names if n.endswith(".py")):
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:gitswarm/sandbox/{name}"],
                              check=True, capture_output=True, text=True).stdout
        (package / name).write_text(text.replace("gitswarm.sandbox.", "oldsandbox."))
    sys.path.insert(0, str(into))
    return importlib.import_module("oldsandbox")


def one_grading(problem, source: Path, work: Path, runner) -> float:
    """compile.sh, then every counted branch against what it built: seconds."""
    reproduce.run = submission.run = runner
    tree, scratch = work / "submission", work / "grading"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, tree)
    scratch.mkdir(parents=True)
    (tree / "compile.sh").write_text("cc -O2 -o executable shout.c\n")
    started = time.perf_counter()
    hide = reproduce.hidden(problem, scratch, b"")
    stash = scratch / "stash" / submission.EXECUTABLE
    error = submission.compile_tree(tree, set(), 900.0, [], hide, stash)
    assert error is None, error
    grade = reproduce.run_suite(problem, reproduce.suite_of(problem), stash, scratch, 600.0, [], None, hide,
                                reproduce.sha256(stash.read_bytes()))
    seconds = time.perf_counter() - started
    assert grade.passed == grade.total, f"{grade.passed}/{grade.total}: {grade.results}"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--old", default="08ce2cf", help="The commit whose sandbox is the old way.")
    args = parser.parse_args()
    problem = load_set(resolve_set("demo")).get("demo-shout")
    reference = problem.reference_dir
    assert reference is not None, "demo-shout has a reference"
    new_run = reproduce.run
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        old = old_sandbox(args.old, Path(tmp))

        def old_run(*a, packages=(), **k):
            return old.run(*a, **k)

        arms: dict[str, tuple[str, Callable[..., object]]] = {"old": ("", old_run)}
        for name in ("bwrap", "namespaces"):
            os.environ["GITSWARM_SANDBOX"] = name
            containment.cache_clear()
            if containment().backend is None:
                print(f"{name}: not available here ({containment().refused[name]})")
                continue
            arms[name] = (name, new_run)
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        for _ in range(args.repeat + 1):  # the first round warms caches and is dropped
            for arm, (backend, runner) in arms.items():
                os.environ["GITSWARM_SANDBOX"] = backend or "namespaces"
                containment.cache_clear()
                times[arm].append(one_grading(problem, reference, Path(tmp) / arm, runner))
        base = statistics.median(times["old"][1:])
        print(f"demo-shout: compile.sh + {reproduce.suite_of(problem).total} hidden tests, median of {args.repeat}")
        for arm, samples in times.items():
            median = statistics.median(samples[1:])
            print(f"  {arm:<11} {median:6.3f} s   x{median / base:.2f} of old   "
                  f"(min {min(samples[1:]):.3f}, max {max(samples[1:]):.3f})")


if __name__ == "__main__":
    main()
