"""Builds in the sandbox: the reference executable (built once per process), the bounds of a
build, and the steps a grading log keeps."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from gitswarm.problems.model import Problem
from gitswarm.sandbox import Limits, SandboxResult, programs_in, run

COMPILE_TIMEOUT = 900.0


class ReproduceGradingError(Exception):
    """The problem cannot be graded (no usable tests.json, a reference that does not build)."""


@dataclass(frozen=True)
class Step:
    """One step of the grading, for a human reading the log."""

    step: str
    returncode: int
    seconds: float
    output: str = ""
    timed_out: bool = False


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def reference_executable(problem: Problem, scratch: Path, timeout: float = COMPILE_TIMEOUT) -> bytes:
    """The reference executable's bytes, built once per process for the same reference."""
    key = (problem.build, problem.executable, _digest(problem.reference_dir), problem.image)
    if key not in _BUILT:
        built, step = build_reference(problem, scratch, timeout)
        if built is None:
            raise ReproduceGradingError(f"the reference of {problem.id} does not build (exit "
                                        f"{step.returncode}): {' '.join(step.output[-300:].split())}")
        _BUILT[key] = built
    return _BUILT[key]


_BUILT: dict[tuple, bytes] = {}


def reference_digest(problem: Problem, scratch: Path, timeout: float = COMPILE_TIMEOUT) -> str:
    """The sha256 of the reference executable: the image's own `./executable`, computed in the
    image (it never leaves it), or that of the one built (`reference_executable`)."""
    if problem.reference_in_image and problem.image:
        from gitswarm.sandbox.container import file_digest, image

        return file_digest(problem.image, f"{image(problem.image).workdir}/{EXECUTABLE_IN_IMAGE}")
    return sha256(reference_executable(problem, scratch, timeout))


EXECUTABLE_IN_IMAGE = "executable"
"""Where a task image keeps its reference: `./executable` in its workspace (ProgramBench's layout)."""


def _digest(folder: Path | None) -> str:
    """A digest of a folder's file names and contents."""
    found = hashlib.sha256()
    if folder is None:
        return found.hexdigest()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            found.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return found.hexdigest()


def build_reference(problem: Problem, folder: Path, timeout: float = COMPILE_TIMEOUT) -> tuple[bytes | None, Step]:
    """Copy the reference into `folder`, run its build command there, return the executable."""
    if problem.reference_dir is None or not problem.executable:
        raise ReproduceGradingError(f"{problem.id} has no reference to build")
    shutil.copytree(problem.reference_dir, folder, symlinks=True)
    step = Step("build_reference", 0, 0.0)
    if problem.build:
        with programs_in(problem.image):  # in the problem's image, where it names one
            result = run(["/bin/sh", "-c", problem.build], workdir=folder, limits=compile_limits(timeout))
        step = step_of("build_reference", result)
        if not result.ok:
            return None, step
    built = regular_file(folder, problem.executable)
    return (built.read_bytes() if built else None), step


def compile_limits(timeout: float) -> Limits:
    """Bounds for a build: compilers fork, and Go and Rust reserve much address space."""
    return Limits(wall_seconds=timeout, cpu_seconds=int(timeout), memory_bytes=8 << 30,
                  file_bytes=1 << 30, max_processes=256, output_bytes=64 << 10)


def regular_file(folder: Path, name: str) -> Path | None:
    """`folder/name` if it is a regular file inside `folder` (a link may not point out)."""
    path = folder / name
    if not path.is_file() or not path.resolve().is_relative_to(folder.resolve()):
        return None
    return path


def step_of(name: str, result: SandboxResult) -> Step:
    output = (result.stdout + result.stderr)[-2000:]
    return Step(name, result.exit_code, round(result.duration_seconds, 3), output, result.timed_out)
