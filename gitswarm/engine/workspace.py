"""The code tree a code worker's shell runs in: the problem folder's `code/` as main holds it
in the step's view plus what the episode has staged, as files on disk.

The folder lives for the episode, so build products survive from one command to the next.
When the view moves to a newer main, `advance` brings in what landed there (a teammate's new
codebase, say) and leaves the episode's own changes as they are. Before a command, `sync`
writes the staged `code/` files and removes the deleted ones; after it, `scan` compares the
folder with the view's commit. Text files that changed become staged
files, start files that are gone become deletions, and everything else is skipped with its
reason: binaries and build products (a codebase's `executable`, which its compile.sh builds,
text or not), symbolic links, hidden (dot) names (`SCRATCH` among them: the documented place
for files an episode wants on disk and never in the memory, a reviewer's tests say), paths and
sizes the memory refuses (`memory.paths.check_path`, `WriteLimits`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gitswarm.memory.errors import PathRejected
from gitswarm.memory.paths import WriteLimits, check_path
from gitswarm.memory.repo import Memory

PREFIX = "code/"
"""Staged paths of the tree start with this; on disk they are relative to the folder."""
BUILT = "executable"
"""What a codebase's compile.sh builds at its root: a build product, never staged."""
SCRATCH = ".scratch"
"""The tree's scratch folder: a dot name, so nothing in it is staged."""


@dataclass(frozen=True)
class Skipped:
    """A file of the tree that is not staged, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Scan:
    """The tree's differences from the start commit, as the memory would take them."""

    staged: dict[str, str] = field(default_factory=dict)
    """`code/...` path -> text, for every text file new or changed since the start."""
    deleted: set[str] = field(default_factory=set)
    """`code/...` paths of the start commit that are gone."""
    skipped: list[Skipped] = field(default_factory=list)


def baseline(memory: Memory, problem: str, at: str) -> dict[str, bytes]:
    """The problem's `code/` files on commit `at`, by `code/...` path (git thread)."""
    found = {}
    for item in memory.items(problem, "code", at):
        rel = item.path.removeprefix(f"problems/{problem}/")
        found[rel] = memory.read_file(item.path, at) or b""
    return found


def codebase_problem(start: set[str], staged: dict[str, str], deleted: set[str]) -> str | None:
    """Why the code tree after these changes is not a set of reproduce candidates, or None: each
    changed folder `code/<slug>/` must hold compile.sh at its root (unless it is gone whole),
    and at least one must change."""
    changed = [p for p in (*staged, *deleted) if p.startswith(PREFIX)]
    loose = sorted(p for p in changed if p.count("/") == 1)
    if loose:
        return (f"{loose[0]} lies loose in code/: a reproduce candidate is a folder code/<slug>/ with "
                "compile.sh at its root that builds ./executable; move the files into such a folder")
    if not changed:
        return ("a code contribution to a reproduce problem changes a codebase code/<slug>/ (with "
                "compile.sh at its root that builds ./executable); nothing under code/ is staged")
    tree = (start - deleted) | set(staged)
    for slug in sorted({p.split("/")[1] for p in changed}):
        if any(p.startswith(f"{PREFIX}{slug}/") for p in tree) and f"{PREFIX}{slug}/compile.sh" not in tree:
            return (f"code/{slug}/ has no compile.sh at its root: a reproduce candidate is a codebase "
                    f"whose code/{slug}/compile.sh builds ./executable (grading runs it in a fresh copy "
                    "of the folder); stage one, then contribute")
    return None


class Workspace:
    """One episode's code tree on disk (a private temporary folder, removed by `close`)."""

    def __init__(self, start: dict[str, bytes]) -> None:
        self.start = dict(start)
        self.root = Path(tempfile.mkdtemp(prefix="gitswarm-code-"))
        for path, data in self.start.items():
            _write(self.root, self.root / path.removeprefix(PREFIX), data)

    def advance(self, start: dict[str, bytes]) -> None:
        """Take `start` (main's `code/` files of a newer view) as the tree's baseline: each file
        that changed on main is written, or removed, unless the episode changed it itself, whose
        version stays (it is staged against the new baseline, or deleted)."""
        for path in sorted(set(self.start) | set(start)):
            old, new = self.start.get(path), start.get(path)
            if old == new:
                continue
            target = self.root / path.removeprefix(PREFIX)
            here = _real_folders(self.root, target) and target.is_file() and not target.is_symlink()
            untouched = (here and target.read_bytes() == old) if old is not None else not (here or target.exists())
            if not untouched:
                continue
            if new is None:
                _clear(target)
            else:
                _write(self.root, target, new)
        self.start = dict(start)

    def sync(self, staged: dict[str, str], deleted: set[str]) -> None:
        """Put what is staged under `code/` on disk, and take the deleted files away."""
        for path, text in staged.items():
            if path.startswith(PREFIX):
                target = self.root / path.removeprefix(PREFIX)
                data = text.encode()
                if not (_real_folders(self.root, target) and target.is_file() and not target.is_symlink()
                        and target.read_bytes() == data):
                    _write(self.root, target, data)
        for path in deleted:
            target = self.root / path.removeprefix(PREFIX)
            if _real_folders(self.root, target):
                _clear(target)

    def scan(self, limits: WriteLimits, room: int) -> Scan:
        """The tree against its baseline; at most `room` files staged or deleted."""
        result = Scan()
        present: set[str] = set()
        for rel, path in self._entries(result.skipped):
            present.add(rel)
            data, reason = _read(path, limits)
            if data is not None and self.start.get(rel) == data:
                continue
            reason = reason or _built(rel) or _refusal(rel, data or b"", limits) or _full(result, room, limits)
            if reason:
                result.skipped.append(Skipped(rel, reason))
            else:
                result.staged[rel] = (data or b"").decode()
        for rel in sorted(set(self.start) - present):
            reason = _full(result, room, limits)
            if reason:
                result.skipped.append(Skipped(rel, f"not deleted: {reason}"))
            else:
                result.deleted.add(rel)
        return result

    def _entries(self, skipped: list[Skipped]):
        """(`code/...` path, file) for every regular file, in a stable order. Links, other
        non-files and new dot names (caches, tool state) are skipped, a folder whole."""
        known = {p for path in self.start for p in _and_parents(path)}
        for folder, dirs, names in os.walk(self.root):
            base = Path(folder)
            for name in sorted(dirs):
                rel = _rel(self.root, base / name)
                if (base / name).is_symlink() or (name.startswith(".") and rel not in known):
                    skipped.append(Skipped(rel + "/", _odd(base / name)))
                    dirs.remove(name)
            dirs.sort()
            for name in sorted(names):
                path, rel = base / name, _rel(self.root, base / name)
                if path.is_symlink() or not path.is_file() or (name.startswith(".") and rel not in known):
                    skipped.append(Skipped(rel, _odd(path)))
                else:
                    yield rel, path

    def close(self) -> None:
        """Remove the folder (the sandbox may have left parts of it without write permission)."""
        for folder, dirs, _names in os.walk(self.root):
            for name in dirs:
                path = Path(folder, name)
                if not path.is_symlink():
                    path.chmod(0o700)
        shutil.rmtree(self.root, ignore_errors=True)


def _rel(root: Path, path: Path) -> str:
    return PREFIX + path.relative_to(root).as_posix()


def _odd(path: Path) -> str:
    if path.is_symlink():
        return "a symbolic link: the memory keeps regular files only"
    if path.name.startswith("."):
        return "a hidden (dot) name: not staged"
    return "not a regular file"


def _and_parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:n]) for n in range(2, len(parts) + 1)]


def _read(path: Path, limits: WriteLimits) -> tuple[bytes | None, str | None]:
    """The file's bytes, or None and why they were not read (too large, unreadable)."""
    try:
        info = path.stat()
        size = info.st_size
        if info.st_nlink > 1:
            return None, "a hard link: the memory keeps plain files only"
        if size > limits.max_file_bytes:
            return None, f"{size} bytes; the limit is {limits.max_file_bytes}"
        return path.read_bytes(), None
    except OSError as exc:
        return None, f"unreadable: {exc.strerror}"


def _built(rel: str) -> str | None:
    """Why a build product is not staged, or None: `code/<slug>/executable`."""
    parts = rel.split("/")
    return "a build product (compile.sh builds it): not staged" if len(parts) == 3 and parts[2] == BUILT else None


def _refusal(rel: str, data: bytes, limits: WriteLimits) -> str | None:
    """Why the memory would not take this file as it is, or None."""
    try:
        check_path(rel, limits)
    except PathRejected as exc:
        return exc.reason
    if b"\x00" in data:
        return "binary (a build product?): only text is staged"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text: only text is staged"
    return None


def _full(result: Scan, room: int, limits: WriteLimits) -> str | None:
    if len(result.staged) + len(result.deleted) >= room:
        return f"one contribution holds at most {limits.max_files} files"
    return None


def _real_folders(root: Path, path: Path) -> bool:
    """Every folder between `root` and `path` is a real folder, not a link out of the tree."""
    return all((root / p).is_dir() and not (root / p).is_symlink()
               for p in path.relative_to(root).parents[:-1])


def _write(root: Path, path: Path, data: bytes) -> None:
    """Write `path` inside `root`, never through a link: a file or link the shell left where a
    folder goes is cleared first (top down), then whatever is at `path` itself."""
    for parent in reversed(path.relative_to(root).parents[:-1]):
        if (root / parent).is_symlink() or (root / parent).is_file():
            _clear(root / parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    _clear(path)
    path.write_bytes(data)
    path.chmod(0o755 if data.startswith(b"#!") else 0o644)


def _clear(path: Path) -> None:
    """Remove whatever is at `path` (a file, a link, a folder)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()
