"""The index of main kept in a file beside the run, so that a reader does not walk history.

`status`, the dashboard and the report read the run through a `MemoryIndex` of main's
history: built from scratch, that reads every commit's record (4.6 s at 100,000 commits).
The file `<run>/gitswarm-index` holds the index as it stood at some tip of main; a reader
loads it, takes in the commits main gained since (`indexing.extend`) and writes it back when
it moved. The engine writes it as the run goes (`Store.update_index`, at most every few
seconds) and at the run's end.

It is never the truth: git is. A file that is missing, unreadable, of another format, of
another run, or whose tip is not in main's history (main moved back or was rewritten) is
ignored and the index built again from git. The format is `marshal` of plain values (no code
is run to read it, unlike pickle), tagged with its version.
"""

from __future__ import annotations

import gc
import marshal
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pygit2

from gitswarm.domain.index import MemoryIndex, ProblemIndex
from gitswarm.domain.review import Review
from gitswarm.memory import indexing

FILE = "gitswarm-index"
"""The file's name in the run's git folder (git ignores files it does not know there)."""
FORMAT = "gitswarm-index/2"


def path_of(repo: pygit2.Repository) -> Path:
    return Path(repo.path) / FILE


def kept(repo: pygit2.Repository, tip: str) -> MemoryIndex:
    """The index of main up to `tip`: the file's, extended by the commits since, else built
    from git; the file written again when the index moved."""
    index = load(repo)
    if index is not None:
        before = index.seen_tip
        if indexing.extend(index, repo, tip):
            if index.seen_tip != before:
                save(index, repo)
            return index
    index = MemoryIndex()
    indexing.update(index, repo, tip)
    save(index, repo)
    return index


def load(repo: pygit2.Repository) -> MemoryIndex | None:
    """The index the file holds, or None (no file, or one this version cannot use)."""
    collecting = gc.isenabled()
    gc.disable()  # a million new objects, none of them garbage: the collector would walk them all
    try:
        data = marshal.loads(path_of(repo).read_bytes())
        return _decode(data) if isinstance(data, tuple) and data[:1] == (FORMAT,) else None
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    finally:
        if collecting:
            gc.enable()


def save(index: MemoryIndex, repo: pygit2.Repository) -> None:
    """Write the index to the file, whole or not at all (a temporary file renamed over it).
    A run folder this process may not write keeps its old file: the next reader builds on it."""
    with index.lock:  # the engine's live index: nothing taken in, nothing added, while it is copied
        data = marshal.dumps(_encode(index))
    target = path_of(repo)
    try:
        fd, part = tempfile.mkstemp(prefix=f".{FILE}.", dir=target.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(part, target)
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise


def _encode(index: MemoryIndex) -> tuple[Any, ...]:
    """Plain values. A commit id is one string object in `taken`, `files_of`, `authors` and the
    items (`indexing` makes it once), and marshal writes an object met again as a reference, so
    it is stored and read once; of the taken commits only those that wrote no files are listed
    (the rest are `files_of`'s keys)."""
    problems = {pid: (p.items, dict(p.kinds), dict(p.nominations), p.nominators,
                      {c: {w: r.as_dict() for w, r in by.items()} for c, by in p.reviews.items()})
                for pid, p in index.problems.items()}
    return (FORMAT, index.seen_tip, problems, dict(index.cited), index.files_of, index.authors,
            index.answered, index.taken - index.files_of.keys(), index.people, index.inherited_runs,
            index.inherited, dict(index.built_on))


def _decode(data: tuple[Any, ...]) -> MemoryIndex:
    _, tip, problems, cited, files_of, authors, answered, others, people, inherited_runs, inherited, built_on = data
    index = MemoryIndex(cited=Counter(cited), files_of=files_of, authors=authors, answered=answered,
                        people=people, inherited_runs=frozenset(inherited_runs), inherited=inherited,
                        built_on=Counter(built_on), seen_tip=tip, taken=others.union(files_of))
    for pid, (items, kinds, nominations, nominators, reviews) in problems.items():
        index.problems[pid] = ProblemIndex(items, Counter(kinds), Counter(nominations), nominators,
                                           {c: {w: Review(**r) for w, r in by.items()} for c, by in reviews.items()})
    return index
