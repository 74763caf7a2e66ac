"""Bookkeeping refs (`refs/gitswarm/<name>`): JSON records agents never read.

Each ref is a chain of commits whose tree holds one file per record, so a record is
written once with its history kept, and `git log refs/gitswarm/ledger` shows every change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pygit2
from pygit2.enums import FileMode

from gitswarm.memory import objects, trees
from gitswarm.memory.errors import Contention
from gitswarm.memory.write import committer


def ref_name(book: str) -> str:
    return f"refs/gitswarm/{book}"


def put(repo: pygit2.Repository, book: str, records: dict[str, object], message: str) -> str | None:
    """Write `records` (path -> JSON value) to the book in one commit; None if all unchanged."""
    blobs = {path: json.dumps(value, sort_keys=True, indent=1).encode() for path, value in records.items()}
    return put_blobs(repo, book, blobs, message)


def put_blobs(repo: pygit2.Repository, book: str, blobs: Mapping[str, bytes | None], message: str,
              keep: bool = False) -> str | None:
    """Write `blobs` (path -> bytes, a text file each; None removes the path) to the book in
    one commit; None if all unchanged. `keep`: a path the book already holds is left as it is."""
    name = ref_name(book)
    ref = repo.references.get(name)
    tip = repo[ref.target].peel(pygit2.Commit) if ref is not None else None
    if keep:
        blobs = {path: data for path, data in blobs.items() if trees.lookup(tip.tree if tip else None, path) is None}
    written = trees.blobs(repo, {path: data for path, data in blobs.items() if data is not None})
    removed = {path: None for path, data in blobs.items() if data is None}
    changes = {p: e for p, e in (written | removed).items() if trees.lookup(tip.tree if tip else None, p) != e}
    if not changes:
        return None
    return str(commit_changes(repo, name, tip, changes, message))


def commit_changes(repo: pygit2.Repository, name: str, tip: pygit2.Commit | None, changes: trees.Changes,
                   message: str) -> pygit2.Oid:
    """Commit `changes` on top of `tip` and move ref `name` there, if it still points at `tip`."""
    tree = trees.update(repo, tip.tree if tip else None, changes)
    sig = committer()
    commit = repo.create_commit(None, sig, sig, f"{message.rstrip()}\n", tree, [tip.id] if tip else [])
    with repo.transaction() as txn:
        txn.lock_ref(name)
        now = repo.references.get(name)
        if (now.target if now else None) != (tip.id if tip else None):
            raise Contention(f"{name} moved")
        txn.set_target(name, commit, message=message.partition("\n")[0])
    return commit


def put_notes(repo: pygit2.Repository, ref: str, notes: dict[str, str]) -> None:
    """Attach each text of `notes` to its commit (target id -> text) as a git note, in one
    commit of the notes ref, stored with git's two-level fanout.

    libgit2's create_note keeps every note in one flat tree and rewrites it whole for each
    note: 1.6 ms at 100 notes, 16 ms at 3,000, one note per episode. Under `ab/cdef...` a
    note rewrites a 256-entry tree and one of N/256. Git and libgit2 read either layout; the
    flat entry an older run may hold for the same commit is removed."""
    tip_ref = repo.references.get(ref)
    tip = objects.commit(repo, objects.target(tip_ref)) if tip_ref is not None else None
    changes: trees.Changes = {}
    for target, text in notes.items():
        changes |= {f"{target[:2]}/{target[2:]}": (repo.create_blob(text.encode()), FileMode.BLOB), target: None}
    commit_changes(repo, ref, tip, changes, "Notes added by gitswarm")


def get(repo: pygit2.Repository, book: str, path: str) -> object | None:
    ref = repo.references.get(ref_name(book))
    if ref is None:
        return None
    entry = trees.lookup(objects.commit(repo, objects.target(ref)).tree, path)
    return None if entry is None else json.loads(objects.blob(repo, entry[0]).data)


def all_records(repo: pygit2.Repository, book: str, folder: str = "") -> dict[str, object]:
    """Every record under `folder` of the book: path -> value."""
    ref = repo.references.get(ref_name(book))
    if ref is None:
        return {}
    tree = objects.commit(repo, objects.target(ref)).tree
    if folder:
        try:
            tree = objects.tree(repo, tree[folder].id)
        except KeyError:
            return {}
    found: dict[str, object] = {}
    prefix = f"{folder}/" if folder else ""
    for path, oid in _blobs(repo, tree, prefix):
        found[path] = json.loads(objects.blob(repo, oid).data)
    return found


def _blobs(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, pygit2.Oid]]:
    for entry in tree:
        if entry.type_str == "tree":
            yield from _blobs(repo, objects.tree(repo, entry.id), f"{prefix}{entry.name}/")
        else:
            yield f"{prefix}{entry.name}", entry.id
