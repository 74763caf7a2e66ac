"""What the container backend costs against the host's sandbox (namespaces), in one run:

- one shell command of an episode (`engine.shell`): on the host's root (`run_command`), and in
  the episode's long-lived container (`run_in_container`; its start, once per episode, apart);
- compile.sh plus the hidden tests of the calculator task (`tests/reproduce_fixture.py`, 3
  tests) as `grade_reproduce` grades a correct candidate: the problem with its reference built
  on the host, against the same task imported from its image (`scripts/build_task_image.py`,
  graded in its `:task` image).

Samples are interleaved over `--repeat` rounds (the first dropped); medians, ranges and the
ratio container / namespaces are printed. Needs a container engine and the task image (built
if missing, a minute the first time).

    CONTAINERS_CONF=... python scripts/bench_container.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gitswarm.engine import shell
from gitswarm.problems.loader import load_set
from gitswarm.problems.programbench import import_task
from gitswarm.problems.taskimage import derived
from gitswarm.referee.reproduce import grade_reproduce
from gitswarm.sandbox import containment
from gitswarm.sandbox.container import Container, image

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = "localhost/gitswarm-test"
COMMAND = "ls -la && cat README.md 2>/dev/null; echo done"


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    os.environ["GITSWARM_SANDBOX"] = "namespaces"
    containment.cache_clear()
    if containment().backend is None:
        sys.exit(f"the namespaces backend does not work here: {containment().refused}")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_task_image.py"), "--registry", REGISTRY],
                   check=True, stdout=subprocess.DEVNULL)
    fixture = runpy.run_path(str(ROOT / "tests" / "reproduce_fixture.py"))
    with tempfile.TemporaryDirectory(prefix="bench-container-") as tmp:
        folder = Path(tmp)
        host = load_set(fixture["reproduce_set"](folder / "host")).get("calc")
        task = fixture["task_dir"](folder / "tasks")
        images = derived(task.name, REGISTRY)
        made = import_task(task, None, None, folder / "image", executable="calculator", images=images)
        in_image = load_set(made.problem_file.parent).get(task.name)
        candidate = {k: v.encode() for k, v in fixture["CORRECT"].items()}
        tree = folder / "tree"
        tree.mkdir()
        (tree / "README.md").write_text("a file of the tree\n")
        box = Container(images.image, [(tree, f"{image(images.image).workdir}/code")])
        start = timed(box.start)
        arms: dict[str, Callable[[], object]] = {
            "shell command, namespaces": lambda: shell.run_command(COMMAND, tree, 60, (), ()),
            "shell command, container": lambda: shell.run_in_container(box, COMMAND, tree, 60),
            "compile.sh + tests, namespaces": lambda: grade_reproduce(host, candidate),
            "compile.sh + tests, container": lambda: grade_reproduce(in_image, candidate),
        }
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        try:
            for _ in range(args.repeat + 1):
                for arm, work in arms.items():
                    times[arm].append(timed(work))
        finally:
            box.close()
    print(f"median of {args.repeat} interleaved rounds (the first dropped); the container's start, once per "
          f"episode: {start:.3f} s")
    medians = {arm: statistics.median(samples[1:]) for arm, samples in times.items()}
    for arm, samples in times.items():
        print(f"  {arm:<32} {medians[arm]:7.3f} s   (min {min(samples[1:]):.3f}, max {max(samples[1:]):.3f})")
    for what in ("shell command", "compile.sh + tests"):
        print(f"  {what}: container / namespaces x{medians[what + ', container'] / medians[what + ', namespaces']:.2f}")


if __name__ == "__main__":
    main()
