"""`GitReader` and `GitDir`: a git repository the layers above read and write without pygit2.

`Memory` is a run: its writes mean contributions, merges and books. Some repositories the
remote and the experiment keep are not runs, or are written in other terms: a remote's local
mirror (claim commits pushed from it, refs that follow what the remote accepted), a replay's
run while it is being made, an experiment's index of runs. They write here: a commit of a
tree (`commit`), a ref moved by compare-and-swap (`move`), or set to what a remote's own
lease decided (`follow`), the one move that takes no old value. Ids are hex strings.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import RepositoryOpenFlag

from gitswarm.domain.contribution import Contribution
from gitswarm.memory import books, commitmeta, gitrefs, objects, read, refnames, trees, write
from gitswarm.memory.errors import MemoryError_
from gitswarm.memory.model import CommitInfo
from gitswarm.memory.paths import WriteLimits
from gitswarm.memory.retry import retry

Person = tuple[str, str]
"""A commit's author or committer: (name, email)."""


class RefMoved(MemoryError_):
    """`GitDir.move` found the ref at another value than the one it was told (`now`)."""

    def __init__(self, name: str, expected: str | None, now: str | None) -> None:
        super().__init__(f"{name} is at {now or 'nothing'}, not {expected or 'nothing'}")
        self.name, self.expected, self.now = name, expected, now


@dataclass(frozen=True)
class Delta:
    """One path a commit changed against another (`GitReader.diff`; renames are not detected)."""

    status: str
    """git's letter for the change: A(dded), M(odified), D(eleted), T(ype changed)."""
    old_path: str
    path: str
    mode: int
    """The new entry's file mode (`trees.FILE` for a plain file)."""
    blob: str
    """The new content's id (`GitReader.blob`)."""


class GitReader:
    """One git repository as its readers see it: refs, files of commits, books; no write.
    A reader over a run's `Memory` (`Memory.reader`) or a snapshot (`Snapshot.read_with`)
    shares its repository; one opened by path holds its own pygit2 handle."""

    __slots__ = ("_repo", "path")

    def __init__(self, source: Path | str | pygit2.Repository) -> None:
        if isinstance(source, pygit2.Repository):
            self._repo, self.path = source, Path(source.path)
        else:
            self.path = Path(source)
            self._repo = pygit2.Repository(str(self.path), flags=RepositoryOpenFlag.NO_SEARCH)

    def ref(self, name: str) -> str | None:
        """The commit ref `name` points to, or None without it."""
        found = self._repo.references.get(name)
        return None if found is None else str(objects.target(found))

    def refs(self, prefix: str) -> set[str]:
        """The full names of the refs under the folder `prefix` (`refs/.../`)."""
        return refnames.under(self._repo, prefix)

    def resolve(self, rev: str) -> str | None:
        """The commit `rev` names (an id, a unique prefix of one, a ref), or None when none."""
        try:
            return str(self._repo.revparse_single(rev).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None

    def __contains__(self, oid: str) -> bool:
        """Whether the repository holds the object `oid`."""
        return oid in self._repo

    def file(self, commit: str, path: str) -> bytes | None:
        """The content of the file at `path` on `commit`, or None (absent, or a folder)."""
        entry = trees.lookup(objects.commit(self._repo, commit).tree, path)
        if entry is None:
            return None
        found = self._repo[entry[0]]
        return found.data if isinstance(found, pygit2.Blob) else None

    def blob(self, oid: str) -> bytes:
        """The content of the blob `oid` (KeyError without it, TypeError for another kind)."""
        return objects.blob(self._repo, oid).data

    def info(self, commit: str) -> CommitInfo:
        """The commit `commit` as readers see it, its record decoded (`memory.read.info`)."""
        return read.info(objects.commit(self._repo, commit))

    def diff(self, before: str, after: str) -> list[Delta]:
        """The paths commit `after` changed against commit `before`, in git's order."""
        tree = objects.commit(self._repo, before).tree
        return [Delta(d.status_char(), d.old_file.path, d.new_file.path, int(d.new_file.mode), str(d.new_file.id))
                for d in tree.diff_to_tree(objects.commit(self._repo, after).tree).deltas]

    def changes(self, commit: str, problem: str) -> commitmeta.Changes:
        """The files `commit` wrote and deleted in `problem`'s folder (`commitmeta.changes`)."""
        return commitmeta.changes(self._repo, objects.commit(self._repo, commit), problem)

    def note(self, commit: str, ref: str) -> str | None:
        """The git note on `commit` in the notes ref `ref`, or None."""
        try:
            return self._repo.lookup_note(commit, ref).message
        except KeyError:
            return None

    def validate(self, contribution: Contribution, limits: WriteLimits) -> dict[str, bytes]:
        """`memory.write.validate` against this repository: the checks a contribution passes
        before it is written (`ContributionRefused` otherwise); the files it writes."""
        return write.validate(self._repo, contribution, limits)

    def commit_time(self, commit: str) -> int:
        """When `commit` was committed (seconds since the epoch)."""
        return objects.commit(self._repo, commit).commit_time

    def written(self, commit: str) -> list[str]:
        """The paths `commit` added or changed against its first parent (none for a root)."""
        found = objects.commit(self._repo, commit)
        if not found.parents:
            return []
        changed = trees.diff(self._repo, found.parents[0].tree, found.tree)
        return [path for path, entry in changed.items() if entry is not None]

    def in_history(self, commit: str | None, tip: str | None) -> bool:
        """`commit` is `tip` or one of its ancestors (False when either is None or unknown)."""
        return read.in_history(self._repo, tip, commit)

    def since(self, tip: str, seen: str | None) -> Iterator[str]:
        """The commits of `tip`'s history that `seen`'s lacks (all of it when `seen` is None)."""
        return read.since(self._repo, tip, seen)

    def config(self, key: str) -> str | None:
        """The value of `key` (`section.name`) in the repository's own git config, or None."""
        found = self._repo.config
        return str(found[key]) if key in found else None

    def versions(self, ref: str, path: str) -> list[bytes]:
        """Every content the file `path` has had along `ref`'s history, newest first, each change
        once (libgit2's walk from the tip); none without the ref."""
        tip = self.ref(ref)
        if tip is None:
            return []
        found, last = [], None
        for commit in self._repo.walk(pygit2.Oid(hex=tip)):
            entry = trees.lookup(commit.tree, path)
            if entry is not None and entry[0] != last:
                found.append(objects.blob(self._repo, entry[0]).data)
            last = entry[0] if entry is not None else None
        return found

    def below(self, commit: str, folder: str) -> Iterator[bytes]:
        """The content of every file below `folder` on `commit` (none when it is no folder),
        depth first: a folder's files, then the folders in it, the last one first."""
        entry = trees.lookup(objects.commit(self._repo, commit).tree, folder)
        if entry is None or entry[1] != trees.FOLDER:
            return
        stack = [objects.tree(self._repo, entry[0])]
        while stack:
            for item in stack.pop():
                if item.filemode == trees.FOLDER:
                    stack.append(objects.tree(self._repo, item.id))
                else:
                    yield objects.blob(self._repo, item.id).data

    def record(self, book: str, path: str) -> object | None:
        """One record of the book `refs/gitswarm/<book>` (`memory.books`), or None."""
        return books.get(self._repo, book, path)

    def records(self, book: str, folder: str = "") -> dict[str, object]:
        """Every record under `folder` of the book: path -> value."""
        return books.all_records(self._repo, book, folder)


class GitDir(GitReader):
    """One bare git repository the layers above write: commits of trees, refs moved by
    compare-and-swap. Opened by path (no search upwards)."""

    __slots__ = ()

    def __init__(self, path: Path | str) -> None:
        super().__init__(Path(path))

    @classmethod
    def init(cls, path: Path | str, initial_head: str | None = None) -> GitDir:
        """A new bare repository at `path` (HEAD on `initial_head`, a branch name, if given)."""
        if initial_head is None:
            pygit2.init_repository(str(path), bare=True)
        else:
            pygit2.init_repository(str(path), bare=True, initial_head=initial_head)
        return cls(path)

    # -- writes -----------------------------------------------------------------------------

    def commit(self, files: Mapping[str, bytes | None], message: str, parents: Sequence[str] = (), *,
               base: str | None = None, author: Person | None = None, when: int | None = None) -> str:
        """Write a commit and return its id; no ref moves. Its tree is `base`'s (a commit; by
        default none: an empty tree) with each of `files` written (bytes) or removed (None);
        its author is `author` (default: gitswarm, the committer), both dated `when` (default:
        now) in UTC."""
        tree = objects.commit(self._repo, base).tree if base is not None else None
        written = trees.blobs(self._repo, {p: data for p, data in files.items() if data is not None})
        changes: trees.Changes = {**written, **{p: None for p, data in files.items() if data is None}}
        at = int(time.time()) if when is None else when
        committer = pygit2.Signature(*write.COMMITTER, at, 0)
        by = committer if author is None else pygit2.Signature(*author, at, 0)
        ids = [pygit2.Oid(hex=p) for p in parents]
        return str(self._repo.create_commit(None, by, committer, message, trees.update(self._repo, tree, changes), ids))

    def configure(self, values: Mapping[str, str]) -> None:
        """Set each key (`section.name`) of `values` in the repository's own git config."""
        for key, value in values.items():
            self._repo.config[key] = value

    def move(self, name: str, new: str, old: str | None) -> None:
        """Move ref `name` from `old` (None: it must not exist) to `new`, by compare-and-swap
        under the ref's lock (a lock another writer holds is waited for); `RefMoved` when the
        ref holds anything else."""
        now = retry(lambda: self._swap(name, new, old))
        if now != old:
            raise RefMoved(name, old, now)

    def _swap(self, name: str, new: str, old: str | None) -> str | None:
        """Set `name` to `new` if it is at `old`; what it was at, either way."""
        with self._repo.transaction() as txn:
            txn.lock_ref(name)
            now = self.ref(name)
            if now == old:
                txn.set_target(name, pygit2.Oid(hex=new), message=f"gitswarm: {name}")
        return now

    def follow(self, name: str, new: str | None) -> None:
        """Set ref `name` to `new`, or delete it (None), whatever it held: for a mirror's ref
        after the remote moved it by its own lease (the remote's value is the truth there)."""
        def action() -> None:
            if new is None:  # git deletes it: the ref may be packed (`gitrefs`)
                if self._repo.references.get(name) is not None:
                    gitrefs.transact(self._repo, [gitrefs.RefChange(name, None)], f"gitswarm: follow {name}")
                return
            with self._repo.transaction() as txn:
                txn.lock_ref(name)
                txn.set_target(name, pygit2.Oid(hex=new), message=f"gitswarm: follow {name}")
        retry(action)

