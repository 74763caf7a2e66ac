"""The names of a repository's refs under one prefix, without listing every ref.

A run holds one ref per operation ever written (100,000 on a long run), and a coordinator's
mirror gains several per episode; libgit2 lists refs only by iterating all of them, one
Reference object each (0.18 s at 100,000), and the coordinator asked for the claims five
times a second. The files backend keeps loose refs as files under `refs/` and packed ones
as one sorted block of `packed-refs`, so one prefix is one folder and one stretch of that
file. Any other storage (an unsorted packed-refs): libgit2's list, filtered.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2


def under(repo: pygit2.Repository, prefix: str) -> set[str]:
    """Full names of the refs whose names start with `prefix` (a folder: it ends in "/")."""
    if not prefix.startswith("refs/") or not prefix.endswith("/"):
        raise ValueError(f"{prefix}: a ref folder (refs/.../) is needed")
    folder = Path(repo.path)
    packed = folder / "packed-refs"
    data = packed.read_bytes() if packed.exists() else b""
    end = data.find(b"\n")
    header = data if end == -1 else data[:end]  # not split(): that copies the whole file again
    if data and not (header.startswith(b"# pack-refs with:") and b" sorted" in header):
        return {name for name in repo.listall_references() if name.startswith(prefix)}
    names = _packed(data, prefix.encode())
    loose = folder / prefix
    for root, _, files in os.walk(loose):
        within = Path(root).relative_to(folder).as_posix()
        names.update(f"{within}/{f}" for f in files if not f.endswith(".lock"))
    return names


def _packed(data: bytes, prefix: bytes) -> set[str]:
    """The names under `prefix` in a sorted packed-refs file: one stretch of its lines, each
    `<id> <name>` (a `^<id>` line after an annotated tag peels it)."""
    at = data.find(b" " + prefix)  # a name holds no space: this is the first name under prefix
    if at == -1:
        return set()
    names, start = set(), data.rfind(b"\n", 0, at) + 1
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end == -1 else end
        line, start = data[start:end], end + 1
        if line.startswith(b"^"):
            continue
        name = line.partition(b" ")[2]
        if not name.startswith(prefix):
            break
        names.add(name.decode())
    return names
