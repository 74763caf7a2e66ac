"""What the engine knows of the memory without re-reading history: which commit wrote each
item, how often each commit was cited, the nominations and the reviews of each problem.

Built once from main's history (each commit's record, `commitmeta.decode`, and the files it
changed, `commitmeta.changes`) and then extended with each merge's new commits, so prompts and
the scheduler never walk history.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import SortMode

from gitswarm.memory import commitmeta, objects
from gitswarm.memory.commitmeta import Kind, Verdict
from gitswarm.memory.model import KIND_FOLDERS

ITEM_FOLDERS = tuple(KIND_FOLDERS.values())
VERDICTS = tuple(Verdict)
"""A review's verdict: no issue, justification gaps only, or a critical error."""
CANDIDATE_FOLDERS = ("attempts/", "code/")


@dataclass(frozen=True)
class Review:
    """One review of a candidate, from the review commit's record."""

    commit: str
    worker: str
    episode: str
    verdict: str


@dataclass
class ProblemIndex:
    """One problem's items and votes."""

    items: dict[str, str] = field(default_factory=dict)
    """Item path (notes/, lemmas/, attempts/, reviews/, code/) -> the commit that last wrote it,
    in the order of those commits (oldest first)."""
    kinds: Counter = field(default_factory=Counter)
    """Contributions by kind."""
    nominations: Counter = field(default_factory=Counter)
    """Candidate commit -> nominations."""
    nominators: set[str] = field(default_factory=set)
    """Workers that nominated a candidate of this problem."""
    reviews: dict[str, dict[str, Review]] = field(default_factory=dict)
    """Candidate commit -> reviewer worker -> that worker's latest review of it (its author's
    own reviews included: `MemoryIndex.reviews_of` leaves them out)."""


@dataclass
class MemoryIndex:
    """Items, citations and nominations, for every problem of the run."""

    problems: dict[str, ProblemIndex] = field(default_factory=lambda: defaultdict(ProblemIndex))
    cited: Counter = field(default_factory=Counter)
    files_of: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    """Commit -> (problem, files it wrote)."""
    authors: dict[str, str] = field(default_factory=dict)
    """Commit -> the worker that wrote it (its record's `worker`)."""
    answered: set[str] = field(default_factory=set)
    """Commits an attempt or a program cites: a critical review cited so has been answered."""
    seen_tip: str | None = None
    taken: set[str] = field(default_factory=set, repr=False)
    """Every commit taken in: those reachable from `seen_tip`."""

    def update(self, repo: pygit2.Repository, tip: str) -> None:
        """Take in the commits of main between the last seen tip and `tip` (git thread)."""
        new: Iterable[pygit2.Commit]
        if self.seen_tip is None:
            new = repo.walk(pygit2.Oid(hex=tip), SortMode.TOPOLOGICAL | SortMode.REVERSE)
        else:
            new = self._after_taken(repo, tip)
        for commit in new:
            key = str(commit.id)
            self.taken.add(key)
            self._add(repo, commit)
        self.seen_tip = tip

    def _after_taken(self, repo: pygit2.Repository, tip: str) -> list[pygit2.Commit]:
        """The commits reachable from `tip` that are not taken in yet, parents first, in the
        order of libgit2's reverse topological walk (depth first, parents in their order,
        each after its parents). A walk hiding the last tip would go through the whole
        history each time (13 ms at 2,000 commits); this one stops at the taken commits."""
        found: list[pygit2.Commit] = []
        if tip in self.taken:
            return found
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
            if parent not in self.taken and parent not in pushed:
                pushed.add(parent)
                stack.append((objects.commit(repo, parents[i]), 0))
        return found

    def _add(self, repo: pygit2.Repository, commit: pygit2.Commit) -> None:
        meta = commitmeta.decode(commit.message)
        problem, kind = getattr(meta, "problem", ""), getattr(meta, "kind", "")
        if not problem or not kind or kind == Kind.MERGE:
            return
        key, index = str(commit.id), self.problems[problem]
        worker = getattr(meta, "worker", "")
        if kind == Kind.SUMMARY and worker == "merger":  # the merger's summaries: nobody's work
            return
        index.kinds[kind] += 1
        changed = commitmeta.changes(repo, commit, problem, meta)
        self.files_of[key] = (problem, list(changed.written))
        self.authors[key] = worker
        for path in changed.written:
            if path.split("/")[0] in ITEM_FOLDERS:
                index.items.pop(path, None)  # a rewritten item moves to the end: newest last
                index.items[path] = key
        for path in changed.deleted:
            index.items.pop(path, None)
        cited = getattr(meta, "informed_by", ())
        self.cited.update(cited)
        if isinstance(meta, commitmeta.Nomination) and meta.candidate:
            index.nominations[meta.candidate] += 1
            index.nominators.add(worker)
        if kind in (Kind.ATTEMPT, Kind.CODE):
            self.answered.update(cited)
        if isinstance(meta, commitmeta.Review) and meta.reviews and isinstance(meta.verdict, Verdict):
            self._review(index, Review(key, worker, meta.episode, meta.verdict), meta.reviews)

    @staticmethod
    def _review(index: ProblemIndex, review: Review, candidate: str) -> None:
        """Keep `review` unless its worker has a later one of `candidate` (by episode number:
        two branches may reach main in either order)."""
        by = index.reviews.setdefault(candidate, {})
        earlier = by.get(review.worker)
        if earlier is None or episode_order(earlier.episode) <= episode_order(review.episode):
            by.pop(review.worker, None)
            by[review.worker] = review

    def pinned(self, problem: str) -> MemoryIndex:
        """`problem`'s part of the index as it stands now, frozen: one step's view of main at
        `seen_tip`, which the merger's later updates do not change (git thread, where the
        updates run, so the copy is never taken halfway through one). The maps kept for every
        commit (citations, files, authors) are shared: they only grow, and the problem's own
        items, votes and reviews say which of their commits the view holds."""
        own = self.problems[problem]
        frozen = ProblemIndex(dict(own.items), Counter(own.kinds), Counter(own.nominations), set(own.nominators),
                              {c: dict(by) for c, by in own.reviews.items()})
        part = MemoryIndex(cited=self.cited, files_of=self.files_of, authors=self.authors, answered=self.answered,
                           seen_tip=self.seen_tip)
        part.problems[problem] = frozen
        return part

    def reviews_of(self, problem: str, candidate: str) -> list[Review]:
        """The reviews of `candidate` that count: the latest by each worker but its author."""
        author = self.authors.get(candidate)
        by = self.problems[problem].reviews.get(candidate, {})
        return [r for r in by.values() if r.worker != author]

    def candidates(self, problem: str) -> dict[str, str]:
        """Candidate path (an attempt file or `code/<slug>`) -> its commit, as `resolve` names
        it by path, in the order the items were first written (oldest first). A codebase's commit
        is the newest that wrote one of its files: its tree holds the codebase as it is now."""
        found: dict[str, str] = {}
        for path, commit in self.problems[problem].items.items():
            if path.startswith(CANDIDATE_FOLDERS):  # a codebase is the newest commit that wrote any of its files
                found[candidate_path(path)] = commit
        return found

    def shown(self, problem: str, cited: int, newest: int) -> list[tuple[str, str]]:
        """(path, commit) of the items an overview shows: the `cited` most cited (cited at least
        once; ties go to the newer), then the newest others up to `cited + newest` in all."""
        items = list(self.problems[problem].items.items())
        ranked = heapq.nlargest(cited, ((self.cited[c], i) for i, (_, c) in enumerate(items)
                                        if self.cited[c]))
        chosen = [i for _, i in ranked]
        taken = set(chosen)
        for i in range(len(items) - 1, -1, -1):
            if len(chosen) >= cited + newest:
                break
            if i not in taken:
                chosen.append(i)
        return [items[i] for i in chosen]

    def resolve(self, problem: str, reference: str) -> tuple[str, str] | None:
        """An attempt or code item of `problem`, named by path or (a prefix of) its commit."""
        ref = reference.strip().removeprefix(f"problems/{problem}/").rstrip("/")
        for path, commit in self.candidates(problem).items():
            if path == ref or path.startswith(ref + "/") or (path.startswith("code/") and ref.startswith(path + "/")):
                return commit, path
        if len(ref) >= 7:
            for commit, (owner, files) in self.files_of.items():
                if owner == problem and commit.startswith(ref.lower()):
                    shown = [f for f in files if f.startswith(CANDIDATE_FOLDERS)]
                    if shown:
                        return commit, candidate_path(shown[0])
        return None


def episode_order(episode: str) -> tuple[int, str]:
    """Episode ids in the order the ledger gave them (`e00012` < `e100000`)."""
    return len(episode), episode


def candidate_path(path: str) -> str:
    """An attempt file, or a program's folder `code/<slug>`."""
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] == "code" else path
