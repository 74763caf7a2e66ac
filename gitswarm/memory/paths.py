"""What an agent may write: files inside its own problem folder, of bounded size."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitswarm.memory.errors import PathRejected

SAFE_PART = re.compile(r"[A-Za-z0-9._-]+")
"""Names agents may use: a path is shown to other agents, so it must not carry prose."""
WRITABLE_TOP = ("notes", "lemmas", "attempts", "reviews", "code", "nominations", "SUMMARY.md")


@dataclass(frozen=True)
class WriteLimits:
    """Bounds on one contribution, so one agent cannot flood the memory."""

    max_file_bytes: int = 256 * 1024
    """Largest single file an agent may write."""
    max_files: int = 64
    """Most files in one contribution."""
    max_path_chars: int = 160
    """Longest path, relative to the problem folder."""


def check_path(path: str, limits: WriteLimits = WriteLimits()) -> str:
    """Return `path` normalised (relative to `problems/<id>/`), or raise PathRejected."""
    if not isinstance(path, str) or not path:
        raise PathRejected(str(path), "the path is empty")
    if "\x00" in path:
        raise PathRejected(path, "the path contains a NUL byte")
    if "\\" in path:
        raise PathRejected(path, "use '/' to separate folders")
    if path.startswith("/"):
        raise PathRejected(path, "absolute paths are not allowed; give a path inside your problem folder")
    if len(path) > limits.max_path_chars:
        raise PathRejected(path, f"the path is longer than {limits.max_path_chars} characters")
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise PathRejected(path, "empty, '.' and '..' path components are not allowed")
        if part.lower() == ".git" or part.lower().startswith(".git"):
            raise PathRejected(path, "paths into .git (or .gitmodules, .gitattributes) are not allowed")
        if not SAFE_PART.fullmatch(part):
            raise PathRejected(path, "use only letters, digits, '.', '_' and '-' in file and folder names")
    if parts[0] not in WRITABLE_TOP or (parts[0] == "SUMMARY.md") != (len(parts) == 1):
        raise PathRejected(path, "write only SUMMARY.md or files under notes/, lemmas/, attempts/, "
                           "reviews/ or code/ of your problem folder")
    return path


def check_files(files: dict[str, bytes], limits: WriteLimits = WriteLimits()) -> dict[str, bytes]:
    """Check every path and size of a contribution; return the files keyed by normalised path."""
    if not files:
        raise PathRejected("", "a contribution must write at least one file")
    if len(files) > limits.max_files:
        raise PathRejected("", f"{len(files)} files in one contribution; the limit is {limits.max_files}")
    checked: dict[str, bytes] = {}
    for path, data in files.items():
        clean = check_path(path, limits)
        if len(data) > limits.max_file_bytes:
            raise PathRejected(path, f"{len(data)} bytes; the limit is {limits.max_file_bytes}")
        if b"\x00" in data:
            raise PathRejected(path, "the content contains NUL bytes; write text")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise PathRejected(path, "the content is not UTF-8 text") from None
        checked[clean] = data
    return checked
