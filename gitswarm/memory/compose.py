"""Compose finished episode branches into `main` by tree operations, moved by compare-and-swap.

Contributions mostly add new files, so most merges are unions decided path by path with no
index. A path both sides changed gets a three-way file merge; if that conflicts, the
conflict is returned as data for the merger agent, and that branch waits for a resolution.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import FileMode

from gitswarm.memory import commitmeta, gitrefs, objects, refnames, trees
from gitswarm.memory.errors import Contention
from gitswarm.memory.write import committer

MAIN = "refs/heads/main"
BRANCH_PREFIX = "refs/heads/swarm/"


@dataclass(frozen=True)
class Conflict:
    """Both sides changed `path` incompatibly; the merger agent writes the composed text."""

    episode: str
    path: str
    base: str | None
    ours: str | None
    theirs: str | None
    ours_blob: str | None
    """Identifies the `ours` version a resolution applies to."""


class MainLine:
    """Main's tips and the branch heads its merges took in, as seen by this process.

    Main only moves forward, so every former tip is an ancestor of the current one. A branch
    grows from the tip of its episode's start; walking the branch back to a known commit gives
    its merge base without walking main's history, which libgit2 does for each branch (two
    walks of ~5 ms each at C=64, growing with the run). Branches from before this process
    started fall back to the walk."""

    SEARCH = 16
    """Commits of a branch to look through for a known one."""

    def __init__(self) -> None:
        self.tip: pygit2.Oid | None = None
        self.tips: set[pygit2.Oid] = set()
        self.merged: set[pygit2.Oid] = set()
        """Branch heads main took in since this process first saw it: sound only because
        `advance` follows every step main took, never skipping one."""

    def advance(self, repo: pygit2.Repository, tip: pygit2.Oid) -> None:
        """Take in main's first-parent commits from `tip` back to the last tip seen (only
        this process writes main, so that is a handful of commits)."""
        if self.tip is None:
            self.tip = tip
            self.tips.add(tip)
            return
        at: pygit2.Oid | None = tip
        while at is not None and at not in self.tips:
            commit = objects.commit(repo, at)
            self.tips.add(at)
            self.merged.update(commit.parent_ids[1:])
            at = commit.parent_ids[0] if commit.parent_ids else None
        self.tip = tip

    def base(self, repo: pygit2.Repository, head: pygit2.Oid) -> tuple[bool, pygit2.Oid | None] | None:
        """(already in main, merge base) from what is known, or None if the walk must decide."""
        if head in self.tips or head in self.merged:
            return True, head
        at = head
        for _ in range(self.SEARCH):
            parents = objects.commit(repo, at).parent_ids
            if not parents:
                return None
            at = parents[0]
            if at in self.tips or at in self.merged:
                return False, at
        return None


@dataclass(frozen=True)
class Resolution:
    """The merger's composed text for a conflict, valid while `ours_blob` is still main's."""

    episode: str
    path: str
    ours_blob: str | None
    text: str


@dataclass(frozen=True)
class Composed:
    """The result of one compose: the merge commit (None if nothing merged) and what waits."""

    commit: str | None
    merged: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


def pending(repo: pygit2.Repository) -> dict[str, pygit2.Oid]:
    """Unmerged episode branches: episode id -> tip."""
    found = {}
    for name in refnames.under(repo, BRANCH_PREFIX):  # not every ref: one per op ever written
        ref = repo.references.get(name)
        if ref is not None:
            found[name.removeprefix(BRANCH_PREFIX)] = objects.target(ref)
    return found


def compose(repo: pygit2.Repository, run_id: str, episodes: list[str] | None = None,
            resolutions: Sequence[Resolution] = (), line: MainLine | None = None) -> Composed:
    """One attempt to merge pending branches into main; raises Contention if main moved.
    `line`, kept between calls, spares the history walks (see MainLine)."""
    main = repo.references[MAIN]
    tip = objects.commit(repo, objects.target(main))
    line = line or MainLine()
    line.advance(repo, tip.id)
    if episodes is None:
        branches = pending(repo)
    else:  # the caller knows its branches: listing every ref (one per op ever written) costs more
        refs = {e: repo.references.get(BRANCH_PREFIX + e) for e in episodes}
        branches = {e: objects.target(ref) for e, ref in refs.items() if ref is not None}
    chosen = sorted(branches)
    merged, conflicts, stale = [], [], []
    overlay: trees.Changes = {}  # changes of the branches merged so far; one tree write at the end
    fixes = {(r.episode, r.path): r for r in resolutions}
    for episode in chosen:
        head = branches[episode]
        known = line.base(repo, head)
        if known is None:
            base_id = repo.merge_base(tip.id, head)
            known = (base_id == head, base_id)
        if known[0]:
            stale.append(episode)
            continue
        changes, found = _merge_one(repo, tip, overlay, head, known[1], episode, fixes)
        if found:
            conflicts += found
        else:
            overlay.update(changes)
            merged.append(episode)
    commit = None
    if merged:
        parents = [tip.id] + [branches[e] for e in merged]
        commit = repo.create_commit(None, committer(), committer(),
                                    _message(run_id, repo, parents, merged),
                                    trees.update(repo, tip.tree, overlay), parents)
    _advance(repo, tip.id, commit, {e: branches[e] for e in merged + stale})
    if commit is not None:
        line.advance(repo, commit)
    return Composed(str(commit) if commit else None, merged, conflicts)


def _merge_one(repo: pygit2.Repository, tip: pygit2.Commit, overlay: trees.Changes, head: pygit2.Oid,
               base_id: pygit2.Oid | None, episode: str,
               fixes: dict[tuple[str, str], Resolution]) -> tuple[trees.Changes, list[Conflict]]:
    """The changes that merge branch `head` (merge base `base_id`) into main's tip plus
    `overlay`, or its conflicts."""
    base = (objects.commit(repo, base_id).tree if base_id is not None
            else objects.tree(repo, repo.TreeBuilder().write()))
    theirs = objects.commit(repo, head).tree
    changes: trees.Changes = {}
    conflicts: list[Conflict] = []
    for path, their_entry in trees.diff(repo, base, theirs).items():
        base_entry = trees.lookup(base, path)
        our_entry = overlay[path] if path in overlay else trees.lookup(tip.tree, path)
        if our_entry in (base_entry, their_entry):
            changes[path] = their_entry
            continue
        merged = _merge_file(repo, path, base_entry, our_entry, their_entry)
        fix = fixes.get((episode, path))
        if merged is None and fix is not None and fix.ours_blob == _hex(our_entry):
            merged = repo.create_blob(fix.text.encode())
        if merged is None:
            conflicts.append(Conflict(episode, path, _text(repo, base_entry), _text(repo, our_entry),
                                      _text(repo, their_entry), _hex(our_entry)))
        else:
            changes[path] = (merged, FileMode.BLOB)
    return ({}, conflicts) if conflicts else (changes, [])


def _merge_file(repo: pygit2.Repository, path: str, base: trees.Entry | None, ours: trees.Entry | None,
                theirs: trees.Entry | None) -> pygit2.Oid | None:
    """A clean three-way merge of one file's text, or None when the hunks overlap."""
    if ours is None or theirs is None:
        return None  # one side deleted what the other changed
    ancestor, mine, other = (pygit2.IndexEntry(path, e[0], FileMode(e[1])) if e else None
                             for e in (base, ours, theirs))
    result = repo.merge_file_from_index(ancestor, mine, other)
    if not result.automergeable:
        return None
    return repo.create_blob(result.contents.encode())


def _text(repo: pygit2.Repository, entry: trees.Entry | None) -> str | None:
    return None if entry is None else objects.blob(repo, entry[0]).data.decode("utf-8", "replace")


def _hex(entry: trees.Entry | None) -> str | None:
    return None if entry is None else str(entry[0])


def _message(run_id: str, repo: pygit2.Repository, parents: list[pygit2.Oid], episodes: list[str]) -> str:
    heads = [objects.commit(repo, p) for p in parents[1:]]
    metas = [commitmeta.decode(c.message) for c in heads]
    problems = sorted({getattr(m, "problem", "") for m in metas} - {""})
    digest = hashlib.sha1(b"".join(p.raw for p in parents)).hexdigest()[:16]
    return commitmeta.encode(
        commitmeta.Merge(run=run_id, op=f"merge-{digest}", merged=tuple(episodes)),
        f"merge: compose {len(episodes)} contribution(s) ({', '.join(problems) or 'no problem'})",
        "\n".join(f"- {e}: {c.message.splitlines()[0]}" for e, c in zip(episodes, heads, strict=True)))


def _advance(repo: pygit2.Repository, expected: pygit2.Oid, commit: pygit2.Oid | None,
             done: dict[str, pygit2.Oid]) -> None:
    """Move main from `expected` to `commit` and drop the merged branches, in one transaction:
    libgit2's while no branch is packed (under packed-refs.lock, so none becomes packed),
    else git's (`gitrefs`: libgit2 would rewrite packed-refs from a stale copy)."""
    if commit is None and not done:
        return
    message = f"gitswarm: compose {len(done)} branch(es)"
    with gitrefs.packed_locked(repo):
        if not gitrefs.packed(repo, [BRANCH_PREFIX + e for e in done]):
            _advance_loose(repo, expected, commit, done, message)
            return
    main = gitrefs.RefChange(MAIN, str(commit if commit is not None else expected), str(expected))
    branches = [gitrefs.RefChange(BRANCH_PREFIX + episode, None, str(head)) for episode, head in done.items()]
    gitrefs.transact(repo, [main, *branches], message)


def _advance_loose(repo: pygit2.Repository, expected: pygit2.Oid, commit: pygit2.Oid | None,
                   done: dict[str, pygit2.Oid], message: str) -> None:
    with repo.transaction() as txn:
        txn.lock_ref(MAIN)
        for episode in done:
            txn.lock_ref(BRANCH_PREFIX + episode)
        if repo.references[MAIN].target != expected:
            raise Contention("main moved during compose")
        for episode, head in done.items():
            ref = repo.references.get(BRANCH_PREFIX + episode)
            if ref is None or ref.target != head:
                raise Contention(f"branch swarm/{episode} moved during compose")
        if commit is not None:
            txn.set_target(MAIN, commit, message=message)
        for episode in done:
            txn.remove(BRANCH_PREFIX + episode)
