"""The small task image the container tests run in, built once per machine and reused.

`scripts/build_task_image.py` makes it without a registry (a Debian root by mmdebstrap,
`podman import`, `podman build`): the calculator task of `reproduce_fixture`, named as the
official images are (`<registry>/testorg_1776_calculator.abc1234:task_cleanroom` and `:task`).
Where no container engine works here, the tests that need one skip saying why; with CI=true
they fail instead, so CI cannot pass without running them (as the local_model tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitswarm.sandbox.engines import found

BUILD = Path(__file__).resolve().parents[1] / "scripts" / "build_task_image.py"
REGISTRY = "localhost/gitswarm-test"
MARKER = "only-in-the-task-image"
"""What /opt/image-only.txt holds in the task image, and no host file."""


def unavailable(reason: str) -> None:
    """Skip the test saying why, or fail it under CI (CI=true) where it must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the container tests: {reason}")
    pytest.skip(reason)


def engine_here() -> None:
    """A container engine works on this machine, else the test skips (fails under CI)."""
    here = found()
    if here.engine is None:
        unavailable(here.problem())


def task_images() -> tuple[str, str]:
    """The task's cleanroom and grading images, built if missing (about a minute the first time)."""
    engine_here()
    done = subprocess.run([sys.executable, str(BUILD), "--registry", REGISTRY], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        unavailable(f"the task image could not be built here: {done.stderr.strip()[-500:]}")
    cleanroom, grading = done.stdout.split()[-2:]
    return cleanroom, grading
