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
empty parents stops at a folder that holds anything. libgit2 prunes only under heads, tags and
remotes, but git does anywhere: `git pack-refs` (a user's `git gc`, the run's end) removes each
loose ref it packed and then its folder if left empty, so refs/gitswarm/ops/ (every op ref
packed) and refs/notes/ vanish just the same under a writer (seen in the chaos test, a run
beside `git gc` loops). refs/gitswarm/ops/'s `.keep/` keeps refs/gitswarm/ too, where the books
and a remote's claims are.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

KEEP = ".keep"
"""The empty folder that keeps its parent (a ref folder) from being removed as empty."""
FOLDERS = ("refs/heads/swarm/", "refs/gitswarm/ops/", "refs/notes/")
"""The ref folders a run writes refs into (its branches, op refs and books, transcripts) and a
packer or a merger may leave empty."""


def keep(repo: pygit2.Repository, folders: tuple[str, ...] = FOLDERS) -> None:
    """Make sure each of `folders` (under the repository's git folder) exists and is never empty."""
    base = Path(repo.path)
    for folder in folders:
        try:
            (base / folder / KEEP).mkdir(parents=True, exist_ok=True)
        except PermissionError:
            return  # a reader of a run it may not write: it creates no ref either
