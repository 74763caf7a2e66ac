"""`Snapshot`: a read-only view of a run, pinned at main's tip when it was taken.

`Memory` owns every write; views, reports and exports read through a snapshot it hands out
(`Memory.snapshot()`). Main's tip and the unmerged branches are read once, when the snapshot
is taken, so every read of one snapshot sees the same main while the engine goes on merging;
any other ref is read once, on its first use, and kept. The repository itself stays private
and there is no write method: a reader cannot move a ref or add an object through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Concatenate, ParamSpec, TypeAlias, TypeVar

import pygit2
from pygit2.enums import FileMode, SortMode

from gitswarm.domain.index import MemoryIndex
from gitswarm.memory import commitmeta, compose, indexfile, indexing, objects, read, refnames, trees
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.model import CommitInfo, Item
from gitswarm.memory.read import ParsedBlobs

P = ParamSpec("P")
T = TypeVar("T")
Tree: TypeAlias = pygit2.Tree
"""A folder as a snapshot returns it (`tree`, `subtree`): a value, read through the snapshot."""
Commit: TypeAlias = pygit2.Commit
"""A commit as a snapshot returns it (`commit`, `walk`)."""


class Snapshot:
    """A run as it stood when taken: `main` and `pending` pinned, every other ref read once.

    Its reads return pygit2 commits and trees (values: nothing on them writes) and bytes;
    a rev is a commit id or a full ref name (`refs/...`, read through `ref`)."""

    __slots__ = ("_refs", "_repo", "main", "pending")

    _repo: pygit2.Repository
    _refs: dict[str, str | None]
    main: str
    """Main's tip when the snapshot was taken."""
    pending: Mapping[str, str]
    """The unmerged episode branches then: episode id -> tip."""

    def __init__(self, repo: pygit2.Repository, main: str, branches: dict[str, str]) -> None:
        pinned = {compose.MAIN: main, **{compose.BRANCH_PREFIX + e: tip for e, tip in branches.items()}}
        for name, value in (("_repo", repo), ("main", main), ("pending", MappingProxyType(dict(branches))),
                            ("_refs", pinned)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Snapshot is read-only: {name} cannot be set; take a new one (Memory.snapshot)")

    @classmethod
    def of(cls, repo: pygit2.Repository) -> Snapshot:
        """`repo` as it is now (`Memory.snapshot` takes it under the memory's lock)."""
        main = str(repo.references[compose.MAIN].target)
        return cls(repo, main, {e: str(t) for e, t in compose.pending(repo).items()})

    # -- refs -----------------------------------------------------------------------------

    def ref(self, name: str) -> str | None:
        """The commit ref `name` points to (None without it), read on first use and kept."""
        if name not in self._refs:
            found = self._repo.references.get(name)
            self._refs[name] = None if found is None else str(found.target)
        return self._refs[name]

    def refs(self, prefix: str) -> set[str]:
        """The full names of the refs under the folder `prefix` (`refs/.../`), listed now."""
        return refnames.under(self._repo, prefix)

    # -- objects --------------------------------------------------------------------------

    def commit(self, rev: str) -> pygit2.Commit:
        """The commit `rev` names; KeyError or ValueError when this run has none such."""
        target = self.ref(rev) if rev.startswith("refs/") else rev
        if target is None:
            raise KeyError(rev)
        try:
            return self._repo.revparse_single(target).peel(pygit2.Commit)
        except pygit2.GitError:
            raise ValueError(f"{rev} is not a commit of this run") from None

    def tree(self, at: str | None = None) -> pygit2.Tree:
        """The root tree of commit `at` (default: the pinned main)."""
        return self.commit(at or self.main).tree

    def subtree(self, tree: pygit2.Tree | None, path: str) -> pygit2.Tree | None:
        """The folder at `path` below `tree`, or None (absent, or a file)."""
        entry = trees.lookup(tree, path)
        return objects.tree(self._repo, entry[0]) if entry is not None and entry[1] == FileMode.TREE else None

    def folder_id(self, tree: pygit2.Tree | None, path: str) -> str | None:
        """The tree id of the folder at `path` below `tree`, without reading it; None (absent,
        or a file)."""
        entry = trees.lookup(tree, path)
        return str(entry[0]) if entry is not None and entry[1] == FileMode.TREE else None

    def blob(self, tree: pygit2.Tree | None, path: str) -> bytes | None:
        """The content of the file at `path` below `tree`, or None (absent, or a folder)."""
        found = _file_id(tree, path)
        return None if found is None else objects.blob(self._repo, found).data

    def parsed(self, parses: ParsedBlobs[T], tree: pygit2.Tree | None, path: str) -> T | None:
        """What `parses` makes of the file at `path` below `tree` (once per blob id, so a reader
        kept from read to read parses only new files), or None (absent, or a folder)."""
        found = _file_id(tree, path)
        return None if found is None else parses.get(self._repo, found)

    def files(self, tree: pygit2.Tree, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        """Every file below `tree`, depth first in tree order: (`prefix` + its path, content)."""
        for entry in tree:
            if entry.filemode == FileMode.TREE:
                yield from self.files(objects.tree(self._repo, entry.id), f"{prefix}{entry.name}/")
            else:
                yield f"{prefix}{entry.name}", objects.blob(self._repo, entry.id).data

    def data(self, blob: str | pygit2.Oid) -> bytes:
        """The content of the blob `blob`; KeyError when there is none (TypeError: not a blob)."""
        return objects.blob(self._repo, blob).data

    def touched(self, rev: str) -> list[str]:
        """The paths commit `rev` added, changed or deleted against its first parent, in diff order."""
        new = self.commit(rev)
        diff = (new.parents[0].tree.diff_to_tree(new.tree) if new.parents
                else new.tree.diff_to_tree(swap=True))
        return [delta.new_file.path for delta in diff.deltas]

    def changes(self, commit: pygit2.Commit, problem: str, meta: commitmeta.Record | None = None) -> commitmeta.Changes:
        """The files `commit` wrote and deleted in `problem`'s folder (`commitmeta.changes`)."""
        return commitmeta.changes(self._repo, commit, problem, meta)

    # -- main's content and history (`memory.read`) ----------------------------------------

    def file(self, path: str, at: str | None = None) -> bytes | None:
        """The content of `path` on commit `at` (default: the pinned main), or None."""
        return read.file(self._repo, path, at or self.main)

    def items(self, problem: str, kind: str | None = None, at: str | None = None) -> list[Item]:
        """A problem's items on commit `at` (default: the pinned main)."""
        return read.items(self._repo, problem, kind, at or self.main)

    def info(self, rev: str) -> CommitInfo:
        """The commit `rev` as readers see it (`memory.read.info`)."""
        return read.info(self.commit(rev))

    def walk(self, heads: list[str] | None = None) -> Iterator[pygit2.Commit]:
        """Every commit reachable from `heads` (default: the pinned main), once each, in
        topological order (children first)."""
        first, *rest = heads or [self.main]
        walker = self._repo.walk(self.commit(first).id, SortMode.TOPOLOGICAL)
        for head in rest:
            walker.push(self.commit(head).id)
        return iter(walker)

    def log(self, problem: str | None = None, worker: str | None = None, kind: str | None = None,
            heads: list[str] | None = None) -> Iterator[CommitInfo]:
        """The commits reachable from `heads` (default: the pinned main) whose records match,
        newest first (`memory.read.log`; merges only with kind='merge')."""
        return read.log(self._repo, heads or [self.main], problem, worker, kind)

    def in_history(self, commit: str | None, tip: str | None = None) -> bool:
        """`commit` is `tip` (default: the pinned main) or one of its ancestors."""
        return read.in_history(self._repo, tip or self.main, commit)

    # -- readers of the layers above --------------------------------------------------------

    def catch_up(self, index: MemoryIndex) -> None:
        """Bring `index` up to the pinned main (`indexing.update`)."""
        indexing.update(index, self._repo, self.main)

    def kept_index(self) -> MemoryIndex:
        """The index of the pinned main from the file kept beside the run, brought up to it
        (built from git when the file cannot be used; `indexfile.kept`)."""
        return indexfile.kept(self._repo, self.main)

    def kept_file(self, name: str) -> Path:
        """Where a reader keeps its file `name` beside the run, in its git folder (git ignores
        the files it does not know there): derived data, never the truth."""
        return Path(self._repo.path) / name

    def read_with(self, reader: Callable[Concatenate[GitReader, P], T], *args: P.args,
                  **kwargs: P.kwargs) -> T:
        """`reader(repository, *args)`: a read function of a layer above this one that takes the
        repository's `GitReader` (`remote.published.read_stop`, `remote.exits.read_exits`,
        `memory.conversations.read_conversation`). It reads the refs it names as they are now."""
        return reader(GitReader(self._repo), *args, **kwargs)


def _file_id(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    """The blob id of the file at `path` below `tree`, or None (absent, or a folder)."""
    entry = trees.lookup(tree, path)
    return entry[0] if entry is not None and entry[1] != FileMode.TREE else None
