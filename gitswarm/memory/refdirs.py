"""Ref folders that never vanish under a writer.

libgit2 (refdb_fs.c) deletes a loose ref under refs/heads/, refs/tags/ or refs/remotes/ and
then removes every parent folder left empty (down to refs/heads/ itself). A writer creating a
ref in that folder makes it first (`mkpath`) and then opens `<ref>.lock` with O_EXCL, two
system calls apart: when a merger deletes the last `swarm/<episode>` branch between them, the
open meets no folder and fails with "failed to create locked file '<ref>.lock': No such file
or directory" (git itself retries that case; libgit2 does not). The error is not a held lock
and no retry could tell it from a folder we may not write.

The cause is the folder's becoming empty, so we keep it from ever being empty: each folder
a run writes branches into holds an empty folder `.keep/`. No ref can have that name (a
component of a ref name never starts with "."), git and libgit2 list files only, and removing
empty parents stops at a folder that holds anything. refs/gitswarm/... is not pruned by
libgit2 (its names are outside heads, tags and remotes), so only the branch folders need it.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

KEEP = ".keep"
"""The empty folder that keeps its parent (a ref folder) from being removed as empty."""
BRANCH_FOLDERS = ("refs/heads/swarm/",)
"""The ref folders a run creates and deletes branches in, each episode one."""


def keep(repo: pygit2.Repository, folders: tuple[str, ...] = BRANCH_FOLDERS) -> None:
    """Make sure each of `folders` (under the repository's git folder) exists and is never empty."""
    base = Path(repo.path)
    for folder in folders:
        try:
            (base / folder / KEEP).mkdir(parents=True, exist_ok=True)
        except PermissionError:
            return  # a reader of a run it may not write: it creates no ref either
