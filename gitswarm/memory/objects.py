"""Objects of a run's repository by kind: pygit2 types `repo[oid]` as a bare `Object` and a
ref's target as `Oid | str` (a symbolic ref's target is a name). These say which kind the
caller expects and check it, so a reader gets a `Blob`, `Tree` or `Commit` (and its type)."""

from __future__ import annotations

from typing import TypeVar

import pygit2

Kind = TypeVar("Kind", pygit2.Blob, pygit2.Tree, pygit2.Commit)


def of_kind(repo: pygit2.Repository, oid: pygit2.Oid | str, kind: type[Kind]) -> Kind:
    """The object `oid` of `repo`, a `kind`: KeyError without it, TypeError if it is another kind."""
    found = repo[oid]
    if not isinstance(found, kind):
        raise TypeError(f"{oid} is a {found.type_str}, not a {kind.__name__.lower()}")
    return found


def blob(repo: pygit2.Repository, oid: pygit2.Oid | str) -> pygit2.Blob:
    """The blob `oid` (`of_kind`)."""
    return of_kind(repo, oid, pygit2.Blob)


def tree(repo: pygit2.Repository, oid: pygit2.Oid | str) -> pygit2.Tree:
    """The tree `oid` (`of_kind`)."""
    return of_kind(repo, oid, pygit2.Tree)


def commit(repo: pygit2.Repository, oid: pygit2.Oid | str) -> pygit2.Commit:
    """The commit `oid` (`of_kind`)."""
    return of_kind(repo, oid, pygit2.Commit)


def target(ref: pygit2.Reference) -> pygit2.Oid:
    """The object a direct ref points to; TypeError for a symbolic ref (gitswarm writes none)."""
    found = ref.target
    if not isinstance(found, pygit2.Oid):
        raise TypeError(f"{ref.name} is a symbolic ref (to {found}), not a direct one")
    return found
