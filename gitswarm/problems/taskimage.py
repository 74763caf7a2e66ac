"""What a ProgramBench task image holds for an import: its name, and the documentation it
bundles in its workspace.

The official images are named from the instance id: `programbench/<org>_1776_<repo>` (the
id's `__` becomes `_1776_`), tag `task_cleanroom` for the worker's image (the reference as
`./executable` and its documentation in `/workspace`), `task` for the grading image. The
documentation is whatever the workspace holds besides `./executable` and the git folder:
listed by running `tar` in a container of the image (no network, its unprivileged user),
copied out as the problem's visible `docs/`; the reference is never copied out.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gitswarm.sandbox.container import image
from gitswarm.sandbox.engines import EngineError, engine

REGISTRY = "programbench"
CLEANROOM_TAG, GRADING_TAG = "task_cleanroom", "task"
LEFT_IN_IMAGE = ("executable", ".git")
"""Workspace entries that are not documentation: the reference (run in the image) and git's folder."""
MAX_DOCS_BYTES = 64 << 20


@dataclass(frozen=True)
class TaskImages:
    """The worker's image and the grading image of one task."""

    image: str
    grade_image: str


def derived(instance_id: str, registry: str = REGISTRY) -> TaskImages:
    """The official images of `instance_id` under `registry` (`__` becomes `_1776_`, lower case)."""
    repo = f"{registry.rstrip('/')}/{instance_id.replace('__', '_1776_')}".lower()
    return TaskImages(f"{repo}:{CLEANROOM_TAG}", f"{repo}:{GRADING_TAG}")


def grading_of(image_name: str) -> str:
    """The grading image beside a worker's image: its `:task_cleanroom` tag becomes `:task`; an
    image with another tag is its own grading image."""
    repo, _, tag = image_name.rpartition(":")
    return f"{repo}:{GRADING_TAG}" if repo and tag == CLEANROOM_TAG and "/" not in tag else image_name


def copy_docs(image_name: str, folder: Path) -> list[str]:
    """Copy the documentation the image bundles in its workspace into `folder`; the paths copied,
    sorted. EngineError if the image is not here or its workspace cannot be read."""
    workdir = image(image_name).workdir
    excluded = [f"--exclude=./{name}" for name in LEFT_IN_IMAGE]
    done = engine().cli("run", "--rm", "--network", "none", "--cap-drop", "all", "--security-opt",
                        "no-new-privileges", "--entrypoint", "", "-w", "/", image_name,
                        "tar", "-C", workdir, *excluded, "-cf", "-", ".", timeout=300.0)
    if done.returncode != 0 or len(done.stdout) > MAX_DOCS_BYTES:
        why = "larger than 64 MB" if done.returncode == 0 else done.stderr.decode(errors="replace").strip()[-300:]
        raise EngineError(f"cannot read the workspace {workdir} of {image_name}: {why}")
    return _extract(done.stdout, folder)


def _extract(data: bytes, folder: Path) -> list[str]:
    """The regular files of a tar stream, written below `folder` (nothing outside it, no links)."""
    folder.mkdir(parents=True, exist_ok=True)
    copied = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar:
            rel = PurePosixPath(member.name)
            parts = [p for p in rel.parts if p not in (".", "")]
            if not member.isfile() or not parts or ".." in parts or rel.is_absolute():
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            target = folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            copied.append("/".join(parts))
    return sorted(copied)
