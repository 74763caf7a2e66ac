"""Copies of a reference executable that a sandboxed program's root would show, to cover.

A reproduce problem's candidate (its build, its tests, a worker's shell) must reach no copy
of the reference but the one the tools offer. The root (`view.py`) shows the system's
runtime, so without this a program installed on the machine under the reference's documented
name (`/usr/bin/jq` for a task rebuilding jq) would be one `exec` away, as would any system
file with the reference's content, or the file the reference was imported from. `copies`
lists those paths (and, for links, what they point to); callers give them to the sandbox as
`hide`, and the root covers each one (a file shows as an empty device nothing can run).

Where nothing can be covered (programs run unconfined), `refusal` says why the problem
cannot be run there.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
from pathlib import Path

from gitswarm.sandbox.backends import UNCONFINED
from gitswarm.sandbox.view import SYSTEM, interpreter

SEARCH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""The folders a program's PATH may name (the sandbox's own PATH is a subset)."""


def copies(data: bytes, name: str | None, origin: Path | None = None) -> tuple[Path, ...]:
    """The paths a sandboxed program could reach the reference `data` by: `name` in every
    folder of PATH, `origin` (the file it was imported from), and every file of the shown
    system folders with the same content; each link with the file it points to."""
    found: set[Path] = set()
    folders = (*SEARCH, str(Path(sys.executable).parent))
    named = [Path(folder, name) for folder in folders] if name else []
    for path in [*named, *([Path(origin)] if origin is not None else [])]:
        if os.path.lexists(path):
            found |= {path, path.resolve()}
    if data:  # empty files are many, and none of them a program
        found |= same_content(hashlib.sha256(data).hexdigest(), len(data), roots())
    return tuple(sorted(found))


def roots() -> tuple[str, ...]:
    """The folders a sandboxed program is shown that hold programs: the system's runtime and
    the interpreter's installation, each once."""
    real = {os.path.realpath(p) for p in (*SYSTEM, *interpreter()) if os.path.isdir(p)}
    return tuple(sorted(p for p in real if not any(p != q and p.startswith(q + "/") for q in real)))


def same_content(digest: str, size: int, folders: tuple[str, ...]) -> frozenset[Path]:
    """Every regular file below `folders` of `size` bytes whose sha256 is `digest` (only the
    files of that size are read)."""
    found = set()
    for path in by_size(folders).get(size, ()):
        try:
            with open(path, "rb") as file:
                if hashlib.sha256(file.read()).hexdigest() == digest:
                    found.add(Path(path))
        except OSError:
            continue
    return frozenset(found)


@functools.cache
def by_size(folders: tuple[str, ...]) -> dict[int, tuple[str, ...]]:
    """The regular files below `folders`, by size: walked once per process (some seconds for a
    system's /usr), then every reference's copies are found by reading a few files."""
    found: dict[int, list[str]] = {}
    for top in folders:
        for folder, _dirs, names in os.walk(top):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found.setdefault(info.st_size, []).append(path)
    return {size: tuple(paths) for size, paths in found.items()}


def refusal(problem: str, found: tuple[Path, ...], containment: str) -> str | None:
    """Why `problem` cannot be run on this machine: copies of its reference exist and programs
    run unconfined (nothing can be covered); None when it can."""
    if not found or containment != UNCONFINED:
        return None
    return (f"{problem}: programs run unconfined here, so a candidate could run the copy of the "
            f"reference at {found[0]} instead of being graded; run it where a sandbox backend works "
            "(`gitswarm sandbox check`), or remove that program from this machine")
