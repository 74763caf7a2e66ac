"""Tree surgery: build and compare trees in the object database, with no index or worktree."""

from __future__ import annotations

from collections import defaultdict

import pygit2
from pygit2.enums import DeltaStatus, FileMode

from gitswarm.memory import objects

Entry = tuple[pygit2.Oid, int]
"""A tree entry's content: object id and file mode."""
Changes = dict[str, Entry | None]
"""Path -> new entry, or None to delete the path."""
FOLDER = int(FileMode.TREE)
"""The file mode of a folder's entry (a tree), for readers that tell folders from files."""
FILE = int(FileMode.BLOB)
"""The file mode of a plain file (not executable, not a link)."""


def lookup(tree: pygit2.Tree | None, path: str) -> Entry | None:
    """The entry at `path` in `tree`, or None."""
    if tree is None:
        return None
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id, entry.filemode


def update(repo: pygit2.Repository, tree: pygit2.Tree | None, changes: Changes) -> pygit2.Oid:
    """Write a tree equal to `tree` with `changes` applied; untouched subtrees are shared."""
    here: dict[str, Entry | None] = {}
    below: dict[str, Changes] = defaultdict(dict)
    for path, entry in changes.items():
        head, _, rest = path.partition("/")
        if rest:
            below[head][rest] = entry
        else:
            here[head] = entry
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, entry in here.items():
        if entry is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, entry[0], entry[1])
    for name, sub_changes in below.items():
        current = builder.get(name)
        subtree = objects.tree(repo, current.id) if current is not None and current.filemode == FileMode.TREE else None
        sub_id = update(repo, subtree, sub_changes)
        if len(objects.tree(repo, sub_id)) == 0:
            if current is not None:
                builder.remove(name)
        else:
            builder.insert(name, sub_id, FileMode.TREE)
    return builder.write()


def blobs(repo: pygit2.Repository, files: dict[str, bytes], prefix: str = "") -> Changes:
    """Write `files` as blobs; return the changes that add them under `prefix`."""
    return {f"{prefix}{path}": (repo.create_blob(data), FileMode.BLOB) for path, data in files.items()}


def diff(base: pygit2.Tree, other: pygit2.Tree) -> Changes:
    """What `other` changed relative to `base`, as path changes (renames are delete+add)."""
    changes: Changes = {}
    for delta in base.diff_to_tree(other).deltas:
        if delta.status == DeltaStatus.DELETED:
            changes[delta.old_file.path] = None
        else:
            if delta.old_file.path != delta.new_file.path:
                changes[delta.old_file.path] = None
            changes[delta.new_file.path] = (delta.new_file.id, delta.new_file.mode)
    return changes
