"""The index of main kept in a file beside the run, so that a reader does not walk history.

`status`, the dashboard and the report read the run through a `MemoryIndex` of main's
history: built from scratch, that reads every commit's record (4.6 s at 100,000 commits).
The file `<run>/gitswarm-index` holds the index as it stood at some tip of main; a reader
loads it, takes in the commits main gained since (`indexing.extend`) and writes it back when
it moved far (`REREAD`). The engine writes it as the run goes (`Store.update_index`, every few
seconds, less often as the run grows) and at the run's end.

It is never the truth: git is. A file that is missing, unreadable, of another format, of
another run, or whose tip is not in main's history (main moved back or was rewritten) is
ignored and the index built again from git. The format is JSON (two lines: `_encode`), tagged
with its version (`FORMAT`): a run folder may come from elsewhere, and JSON runs no code and is
read the same by every Python (marshal and pickle are neither).
"""

from __future__ import annotations

import functools
import gc
import json
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pygit2

from gitswarm.domain.index import MemoryIndex, ProblemIndex
from gitswarm.domain.review import Review
from gitswarm.memory import beside, indexing

FILE = "gitswarm-index"
"""The file's name in the run's git folder (git ignores files it does not know there)."""
FORMAT = "gitswarm-index/4"


def path_of(repo: pygit2.Repository) -> Path:
    return Path(repo.path) / FILE


REREAD = 10
"""Taking in a commit from git costs a reader about this many times what writing one commit of
the index costs (35 against 3.5 us at 100,000 commits): a reader writes the file back only
when the commits it took in would cost the next reader more than the write costs it."""


def kept(repo: pygit2.Repository, tip: str) -> MemoryIndex:
    """The index of main up to `tip`: the file's, extended by the commits since, else built
    from git; the file written again when the index moved far enough to be worth it (`REREAD`:
    on a live run the engine writes it every few seconds, and a reader that rewrote the whole
    file for the last seconds' commits would spend ten times what it saved)."""
    index = load(repo)
    if index is not None:
        known = len(index.authors)  # the contributions it holds, what a write's time goes with
        took = indexing.extend(index, repo, tip)
        if took is not None:
            if took * REREAD > known:
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
        return _decode(path_of(repo).read_bytes())
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):  # JSONDecodeError is a ValueError
        return None
    finally:
        if collecting:
            gc.enable()


def save(index: MemoryIndex, repo: pygit2.Repository) -> None:
    """Write the index to the file, whole or not at all (`beside.write_whole`). A run folder
    this process may not write keeps its old file: the next reader builds on it."""
    with index.lock:  # the engine's live index: nothing taken in while it is copied (30 ms at
        frozen = index.copy()  # 100,000 commits), then encoded from the copy (0.3 s) while readers read
    beside.write_whole(path_of(repo), _encode(frozen))


def _encode(index: MemoryIndex) -> bytes:
    """Two JSON objects on two lines, by columns: every commit that wrote files once
    (`commits`), each problem and worker name once, and each problem's items naming their
    commit by its number there (an item's commit wrote it), so that reading makes one string
    per commit, shared by the maps that name it (as `indexing` makes them), and builds the
    large maps in C. The second line holds what only the engine reads (which files each commit
    wrote, the commits taken in that wrote none): a reader leaves it unread until a map made
    of it is asked for (`MemoryIndex.defer`), the first line holding its length and CRC-32."""
    commits = list(index.files_of)
    number = {c: i for i, c in enumerate(commits)}
    pids = list(dict.fromkeys([*index.problems, *(p for p, _ in index.files_of.values())]))
    pid_number = {p: i for i, p in enumerate(pids)}
    workers = sorted(set(index.authors.values()))
    worker_number = {w: i for i, w in enumerate(workers)}
    problems = {pid: [list(p.items), [number[c] for c in p.items.values()], p.kinds, p.nominations,
                      sorted(p.nominators),
                      {c: [[w, r.as_dict()] for w, r in by.items()] for c, by in p.reviews.items()}]
                for pid, p in index.problems.items()}
    engine = json.dumps({"problem": [pid_number[index.files_of[c][0]] for c in commits],
                         "files": [index.files_of[c][1] for c in commits],
                         "others": sorted(index.taken - index.files_of.keys())}, separators=(",", ":")).encode()
    data = {"format": FORMAT, "tip": index.seen_tip, "commits": commits, "problems": pids, "workers": workers,
            "author": [worker_number[index.authors[c]] for c in commits],
            "other_authors": {c: w for c, w in index.authors.items() if c not in number},
            "candidates": [[number[c], path] for c, path in index.candidate_paths.items()],
            "by_problem": problems, "cited": index.cited, "answered": sorted(index.answered), "people": index.people,
            "inherited_runs": sorted(index.inherited_runs), "inherited": index.inherited, "built_on": index.built_on,
            "engine": [len(engine), zlib.crc32(engine)]}
    return json.dumps(data, separators=(",", ":")).encode() + b"\n" + engine


def _decode(raw: bytes) -> MemoryIndex | None:
    head, _, engine = raw.partition(b"\n")
    data = json.loads(head)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    if data["engine"] != [len(engine), zlib.crc32(engine)]:  # whole as written, so read late it cannot fail
        return None
    commits: list[str] = data["commits"]
    at, pids = commits.__getitem__, data["problems"]
    authors = dict(zip(commits, map(data["workers"].__getitem__, data["author"]), strict=True))
    index = MemoryIndex(cited=Counter(data["cited"]), authors=authors | data["other_authors"],
                        candidate_paths={at(n): path for n, path in data["candidates"]},
                        answered=set(data["answered"]), people=data["people"],
                        inherited_runs=frozenset(data["inherited_runs"]), inherited=data["inherited"],
                        built_on=Counter(data["built_on"]), seen_tip=data["tip"])
    for pid, (paths, numbers, kinds, nominations, nominators, reviews) in data["by_problem"].items():
        index.problems[pid] = ProblemIndex(dict(zip(paths, map(at, numbers), strict=True)), Counter(kinds),
                                           Counter(nominations), set(nominators),
                                           {c: {w: Review(**r) for w, r in by} for c, by in reviews.items()})

    @functools.cache
    def columns() -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = json.loads(engine)
        return found

    index.defer("files_of", lambda: dict(zip(commits, zip(map(pids.__getitem__, columns()["problem"]),
                                                           columns()["files"], strict=True), strict=True)))
    index.defer("taken", lambda: set(commits).union(columns()["others"]))
    return index
