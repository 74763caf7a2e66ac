"""Bring a `domain.index.MemoryIndex` up to a tip of main: each new commit's record
(`commitmeta.decode`) and the files it changed (`commitmeta.changes`), in history order.

Built once from main's history and then extended with each merge's new commits (git thread).
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2
from pygit2.enums import SortMode

from gitswarm.domain.index import CommitFacts, MemoryIndex
from gitswarm.domain.kinds import Kind, Verdict
from gitswarm.memory import commitmeta, inherit, objects


def update(index: MemoryIndex, repo: pygit2.Repository, tip: str) -> None:
    """Take in the commits of main between the index's last seen tip and `tip`."""
    new: Iterable[pygit2.Commit]
    if index.seen_tip is None:
        index.inherited_runs = inherit.runs_of(repo)
        new = repo.walk(pygit2.Oid(hex=tip), SortMode.TOPOLOGICAL | SortMode.REVERSE)
    else:
        new = _after_taken(index, repo, tip)[0]
    _take(index, repo, new, tip)


def extend(index: MemoryIndex, repo: pygit2.Repository, tip: str) -> int | None:
    """Take in the commits after the index's last seen tip up to `tip`, when that tip is in
    `tip`'s history: how many it took in. None (the index untouched) when it is not: main
    moved back or was rewritten, and an index of another history must be built again."""
    if index.seen_tip is None:
        update(index, repo, tip)
        return len(index.taken)
    new, met = _after_taken(index, repo, tip)
    if not met:
        return None
    _take(index, repo, new, tip)
    return len(new)


def _take(index: MemoryIndex, repo: pygit2.Repository, new: Iterable[pygit2.Commit], tip: str) -> None:
    """Read each new commit's facts (git), then take them all in under the index's lock (no git
    read while it is held: a reader on the event loop waits for the additions alone)."""
    found: list[tuple[str, CommitFacts | None]] = []
    for commit in new:
        key = str(commit.id)  # one string for the commit wherever the index holds it
        found.append((key, facts_of(repo, commit, key)))
    with index.lock:
        for key, facts in found:
            index.taken.add(key)
            if facts is not None:
                index.add(facts)
        index.seen_tip = tip


def _after_taken(index: MemoryIndex, repo: pygit2.Repository, tip: str) -> tuple[list[pygit2.Commit], bool]:
    """The commits reachable from `tip` that are not taken in yet, parents first, in the
    order of libgit2's reverse topological walk (depth first, parents in their order,
    each after its parents), and whether the walk met the index's last seen tip (it is in
    `tip`'s history: a taken commit on the way from `tip` to it would be its descendant).
    A walk hiding the last tip would go through the whole history each time (13 ms at
    2,000 commits); this one stops at the taken commits."""
    found: list[pygit2.Commit] = []
    if tip == index.seen_tip:  # nothing new, and `taken` (maybe deferred: `MemoryIndex.defer`) not read
        return found, True
    if tip in index.taken:
        return found, tip == index.seen_tip
    met = False
    start = objects.commit(repo, pygit2.Oid(hex=tip))
    stack, pushed = [(start, 0)], {tip}
    while stack:
        commit, i = stack[-1]
        parents = commit.parent_ids
        if i == len(parents):
            stack.pop()
            found.append(commit)
            continue
        stack[-1] = (commit, i + 1)
        parent = str(parents[i])
        met = met or parent == index.seen_tip
        if parent not in index.taken and parent not in pushed:
            pushed.add(parent)
            stack.append((objects.commit(repo, parents[i]), 0))
    return found, met


def facts_of(repo: pygit2.Repository, commit: pygit2.Commit, key: str) -> CommitFacts | None:
    """What the index takes in of `commit`: None for a merge, a commit without a problem or a
    kind, and the merger's summaries (nobody's work)."""
    meta = commitmeta.decode(commit.message)
    problem, kind = getattr(meta, "problem", ""), getattr(meta, "kind", "")
    worker = getattr(meta, "worker", "")
    if not problem or not kind or kind == Kind.MERGE or (kind == Kind.SUMMARY and worker == "merger"):
        return None
    changed = commitmeta.changes(repo, commit, problem, meta)
    nominates = meta.candidate if isinstance(meta, commitmeta.NominationRecord) else ""
    reviews, verdict = "", ""
    if isinstance(meta, commitmeta.ReviewRecord) and isinstance(meta.verdict, Verdict):
        reviews, verdict = meta.reviews, str(meta.verdict)
    return CommitFacts(key, problem, str(kind), worker, getattr(meta, "episode", ""), changed.written,
                       changed.deleted, tuple(getattr(meta, "informed_by", ())), nominates, reviews, verdict,
                       getattr(meta, "person", ""), getattr(meta, "run", ""))
