"""The scratch folder of one sandboxed run (`gitswarm.sandbox.run`): the caller's folder or a
fresh temporary one (removed afterwards, even where the program took away write permission),
the run's files written into it, and its ownership handed to the sandbox uid and back."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath


@contextmanager
def scratch_folder(workdir: Path | None) -> Iterator[Path]:
    """`workdir` (made if missing, kept afterwards), else a fresh temporary folder removed afterwards."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    path = Path(tempfile.mkdtemp(prefix="gitswarm-sandbox-"))
    try:
        yield path
    finally:
        remove_tree(path)


def remove_tree(root: Path) -> None:
    """Remove `root` and all in it, where the program took away write permission too. Only
    folders inside `root` (and `root` itself) are given it back: the folder that holds `root`
    (the system's /tmp) is never touched."""

    def force(func, path, _exc) -> None:
        with suppress(OSError):
            folder = Path(path).parent
            if folder == root or root in folder.parents:
                os.chmod(folder, 0o700)
            os.chmod(path, 0o700)
            func(path)

    if sys.version_info >= (3, 12):
        shutil.rmtree(root, onexc=force)
    else:
        shutil.rmtree(root, onerror=force)


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write each relative path -> content under `root`; a path leaving it is a ValueError."""
    for name, content in files.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"file name must be a relative path inside the sandbox: {name!r}")
        path = root.joinpath(*rel.parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give `root` and everything below it to uid:gid, never following symlinks."""
    os.lchown(root, uid, gid)
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            with suppress(FileNotFoundError):
                os.lchown(os.path.join(folder, name), uid, gid)
