"""The hidden tests against a reference that lives in its image (`Problem.reference_in_image`).

As the official harness runs a task's gold tests: a container of the problem's image, the
branch's files put into its workspace beside the image's own `./executable` (as the image's
user, through a tar on the exec's stdin), pytest run there, the JUnit report read back. The
reference never leaves the image.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from gitswarm.problems.model import Problem
from gitswarm.problems.suite import Branch
from gitswarm.referee.builds import Step, step_of
from gitswarm.referee.junit import Case, read_cases
from gitswarm.sandbox.container import Container, image
from gitswarm.sandbox.spawn import Limits

REPORT = "eval/results.xml"
PYTEST = ["python3", "-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir=.",
          f"--junitxml={REPORT}", "-o", "junit_family=xunit1", "eval/tests"]


def run_branch_in_image(problem: Problem, tests_dir: Path, branch: Branch, limits: Limits) -> tuple[list[Case], Step]:
    """Run one branch's tests against the image's own `./executable`, in a container of the image."""
    assert problem.image is not None
    workdir = image(problem.image).workdir
    box = Container(problem.image, memory_bytes=max(limits.memory_bytes, 256 << 20),
                    processes=max(limits.max_processes, 64))
    quick = Limits(wall_seconds=120.0, cpu_seconds=120, output_bytes=limits.output_bytes)
    try:
        box.exec(["tar", "-xf", "-"], cwd=workdir, limits=quick, stdin=_tar(tests_dir / branch.id))
        box.exec(["rm", "-f", REPORT], cwd=workdir, limits=quick)
        result = box.exec(PYTEST, cwd=workdir, limits=limits, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        report = box.exec(["cat", REPORT], cwd=workdir, limits=Limits(wall_seconds=120.0, output_bytes=64 << 20))
    finally:
        box.close()
    cases = (read_cases(report.stdout.encode()) or []) if report.ok else []
    return cases, step_of(f"run_tests {branch.id} (the image's reference)", result)


def _tar(folder: Path) -> bytes:
    """The files below `folder` as a tar stream, paths relative to it."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            if "__pycache__" not in path.parts:
                tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return data.getvalue()
