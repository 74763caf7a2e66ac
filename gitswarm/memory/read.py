"""Readers of the memory: a problem's items and files from a tree, its history from trailers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import pygit2
from pygit2.enums import FileMode, SortMode

from gitswarm.domain.kinds import KIND_FOLDERS
from gitswarm.memory import commitmeta, objects, trailers
from gitswarm.memory.model import CommitInfo, Item

T = TypeVar("T")


def in_history(repo: pygit2.Repository, tip: str | pygit2.Oid | None, commit: str | pygit2.Oid | None) -> bool:
    """`commit` is `tip` or one of its ancestors; False when either is None or not a commit
    of this repository (libgit2 walks back from `tip` to tell)."""
    if tip is None or commit is None:
        return False
    try:
        tip_id, commit_id = (c if isinstance(c, pygit2.Oid) else pygit2.Oid(hex=c) for c in (tip, commit))
        return tip_id == commit_id or repo.descendant_of(tip_id, commit_id)
    except (KeyError, ValueError, pygit2.GitError):
        return False


def since(repo: pygit2.Repository, tip: str, seen: str | None) -> Iterator[str]:
    """The commits of `tip`'s history that `seen`'s lacks (all of it when `seen` is None), in
    no set order: a main's new commits since an older main, read in the work they add."""
    walker = repo.walk(pygit2.Oid(hex=tip), SortMode.NONE)
    if seen is not None:
        walker.hide(pygit2.Oid(hex=seen))
    return (str(c.id) for c in walker)


def items(repo: pygit2.Repository, problem: str, kind: str | None, at: str) -> list[Item]:
    """The items of a problem on commit `at`, read from its tree (no history walk)."""
    tree = repo.revparse_single(at).peel(pygit2.Tree)
    kinds = [kind] if kind else list(KIND_FOLDERS)
    found: list[Item] = []
    for k in kinds:
        folder = f"problems/{problem}/{KIND_FOLDERS[k]}"
        try:
            sub = tree[folder]
        except KeyError:
            continue
        found += [Item(k, f"{folder}/{path}", str(oid), size)
                  for path, oid, size in _walk(repo, objects.tree(repo, sub.id), "")]
    return found


def files_under(repo: pygit2.Repository, folder: str, at: str) -> list[str]:
    """The paths of the files below `folder` on commit `at` (none when it is not a folder)."""
    tree = repo.revparse_single(at).peel(pygit2.Tree)
    try:
        sub = repo[tree[folder.rstrip("/")].id]
    except KeyError:
        return []
    if not isinstance(sub, pygit2.Tree):
        return []
    return [f"{folder.rstrip('/')}/{path}" for path, _, _ in _walk(repo, sub, "")]


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, pygit2.Oid, int]]:
    for entry in tree:
        if entry.filemode == FileMode.TREE:
            yield from _walk(repo, objects.tree(repo, entry.id), f"{prefix}{entry.name}/")
        else:
            yield f"{prefix}{entry.name}", entry.id, objects.blob(repo, entry.id).size


def file(repo: pygit2.Repository, path: str, at: str) -> bytes | None:
    """The content of `path` on commit `at`, or None if it is not there (or is a folder)."""
    tree = repo.revparse_single(at).peel(pygit2.Tree)
    try:
        obj = repo[tree[path].id]
    except KeyError:
        return None
    return obj.data if isinstance(obj, pygit2.Blob) else None


def info(commit: pygit2.Commit) -> CommitInfo:
    """A commit as readers see it: subject, body and its record (`commitmeta.decode`)."""
    subject, body = trailers.body(commit.message)
    return CommitInfo(
        id=str(commit.id), subject=subject, body=body, author=commit.author.name,
        time=commit.commit_time, parents=tuple(str(p) for p in commit.parent_ids),
        trailers=trailers.parse(commit.message), meta=commitmeta.decode(commit.message),
    )


def log(repo: pygit2.Repository, heads: list[str], problem: str | None, worker: str | None,
        kind: str | None) -> Iterator[CommitInfo]:
    """Walk from `heads`, newest first, keeping the commits whose trailers match."""
    walker = repo.walk(repo.revparse_single(heads[0]).id, SortMode.TOPOLOGICAL | SortMode.TIME)
    for head in heads[1:]:
        walker.push(repo.revparse_single(head).id)
    for commit in walker:
        found = info(commit)
        kind_of = found.kind
        if (kind is None and kind_of == "merge") or (kind is not None and kind_of != kind):
            continue
        if problem is not None and found.problem != problem:
            continue
        if worker is not None and found.author != worker:
            continue
        yield found


class ParsedBlobs(Generic[T]):
    """What `parse` makes of a blob, made once per blob id: a blob's content never changes, so
    neither does its parse. A reader kept from read to read (the dashboard's) then parses only
    the blobs that are new since. Keeps the last `limit` parses; what it gives is shared, so
    callers must not change it. Safe to use from several threads."""

    def __init__(self, parse: Callable[[bytes], T], limit: int = 4096) -> None:
        self._parse, self._limit = parse, limit
        self._kept: dict[pygit2.Oid, T] = {}
        self._lock = threading.Lock()

    def get(self, repo: pygit2.Repository, oid: pygit2.Oid) -> T:
        """The parse of the blob `oid` of `repo`."""
        with self._lock:
            if oid in self._kept:
                return self._kept[oid]
        found = self._parse(objects.blob(repo, oid).data)
        with self._lock:
            if len(self._kept) >= self._limit:
                del self._kept[next(iter(self._kept))]
            self._kept[oid] = found
        return found
