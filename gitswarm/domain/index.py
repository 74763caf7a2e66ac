"""What the run knows of main without re-reading history: which commit wrote each item, how
often each commit was cited, the nominations and the reviews of each problem.

Pure: `MemoryIndex.add` takes one commit's facts (`CommitFacts`, which `memory.indexing`
reads from the commit's record and tree, walking main's history once and then each merge's
new commits), so prompts, the scheduler and the read model never walk history.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitswarm.domain.kinds import CANDIDATE_FOLDERS, ITEM_FOLDERS, Kind, candidate_path, episode_order
from gitswarm.domain.review import Review


@dataclass(frozen=True)
class CommitFacts:
    """What the index takes in of one contribution commit on main."""

    commit: str
    problem: str
    kind: str
    worker: str
    episode: str
    written: tuple[str, ...]
    """The files it added or changed, relative to its problem's folder (`commitmeta.changes`)."""
    deleted: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()
    """Its `informed_by`."""
    nominates: str = ""
    """A nomination's candidate commit."""
    reviews: str = ""
    """A review's candidate commit (only when its verdict is a `Verdict`)."""
    verdict: str = ""
    person: str = ""
    """The person who wrote it (its record's `person`), "" for a worker's."""
    run: str = ""
    """The run its record names."""


@dataclass
class ProblemIndex:
    """One problem's items and votes."""

    items: dict[str, str] = field(default_factory=dict)
    """Item path (notes/, lemmas/, attempts/, reviews/, code/) -> the commit that last wrote it,
    in the order of those commits (oldest first)."""
    kinds: Counter[str] = field(default_factory=Counter)
    """Contributions by kind."""
    nominations: Counter[str] = field(default_factory=Counter)
    """Candidate commit -> nominations."""
    nominators: set[str] = field(default_factory=set)
    """Workers that nominated a candidate of this problem."""
    reviews: dict[str, dict[str, Review]] = field(default_factory=dict)
    """Candidate commit -> reviewer worker -> that worker's latest review of it (its author's
    own reviews included: `MemoryIndex.reviews_of` leaves them out)."""
    derived: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)
    """What readers derive from these items alone (`MemoryIndex.candidates`, the selection's
    `standings`), kept until they change (`MemoryIndex.add` starts a new one): the scheduler
    asks for every open problem's at each pick, each step and selection again, and a walk of
    a problem's items each time made a run's cost per episode grow with its size. A reader
    stores into the dict it read from, so a value computed while an update ran is dropped."""


def _problems() -> defaultdict[str, ProblemIndex]:
    return defaultdict(ProblemIndex)


@dataclass
class MemoryIndex:
    """Items, citations and nominations, for every problem of the run."""

    problems: dict[str, ProblemIndex] = field(default_factory=_problems)
    cited: Counter[str] = field(default_factory=Counter)
    files_of: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    """Commit -> (problem, files it wrote)."""
    candidate_paths: dict[str, str] = field(default_factory=dict)
    """Commit -> the candidate it wrote, below its problem's folder (`attempts/<file>` or
    `code/<slug>`), for the commits that wrote one (`path_of`: the read model asks it of every
    reviewed candidate, and a reader need not make `files_of` for that)."""
    authors: dict[str, str] = field(default_factory=dict)
    """Commit -> the worker that wrote it (its record's `worker`)."""
    answered: set[str] = field(default_factory=set)
    """Commits an attempt or a program cites: a critical review cited so has been answered."""
    people: dict[str, str] = field(default_factory=dict)
    """Commit -> the person who wrote it, for the commits of people (`gitswarm note`, `review`)."""
    inherited_runs: frozenset[str] = frozenset()
    """The runs this run's memory began from (`solve --from`): their commits are inherited."""
    inherited: dict[str, str] = field(default_factory=dict)
    """Commit -> the earlier run that wrote it: its items are this run's memory, its votes (reviews,
    nominations) are not, since selection is the run's own."""
    built_on: Counter[str] = field(default_factory=Counter)
    """Inherited commit -> how often this run's own work cited it."""
    seen_tip: str | None = None
    taken: set[str] = field(default_factory=set, repr=False)
    """Every commit taken in: those reachable from `seen_tip`."""
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    """Held while commits are taken in (the git thread) and by a reader on another thread that
    walks the live maps (the scheduler, a prefix lookup): a dict changing size under a loop
    over it is an error. Taking in holds it for the additions alone, never a git read."""
    views: dict[str, MemoryIndex] = field(default_factory=dict, repr=False, compare=False)
    """Problem -> its frozen part (`pinned`) taken at some tip: while that is still `seen_tip`,
    every step of every episode on the problem reads that one copy."""
    _deferred: dict[str, Callable[[], Any]] = field(default_factory=dict, repr=False, compare=False)
    """Maps not made yet (`defer`), by name, with what makes each."""

    def defer(self, name: str, make: Callable[[], Any]) -> None:
        """Leave the map `name` (`files_of`, `taken`) unmade until it is first read, when `make`
        makes it: a reader of the index kept beside the run (`status`) that never asks for the
        map of every commit's files never pays for it (70 ms of a status at 100,000 commits)."""
        self._deferred[name] = make
        del self.__dict__[name]

    if not TYPE_CHECKING:  # for the type checker, the maps are plain fields

        def __getattr__(self, name: str) -> Any:
            """A deferred map, made on its first read (normal lookup found no attribute)."""
            deferred = self.__dict__.get("_deferred")
            if deferred:
                with self.__dict__["lock"]:  # two threads' first reads make it once
                    if name in self.__dict__:  # made by the other
                        return self.__dict__[name]
                    if name in deferred:
                        self.__dict__[name] = value = deferred[name]()
                        del deferred[name]
                        return value
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def add(self, facts: CommitFacts) -> None:
        """Take in one contribution commit of main, in the order of main's history."""
        key, index = facts.commit, self.problems[facts.problem]
        index.kinds[facts.kind] += 1
        index.derived = {}
        self.files_of[key] = (facts.problem, list(facts.written))
        shown = next((f for f in facts.written if f.startswith(CANDIDATE_FOLDERS)), None)
        if shown:
            self.candidate_paths[key] = candidate_path(shown)
        inherited = bool(facts.run) and facts.run in self.inherited_runs
        # an earlier run's w01 is not this run's w01: its work is not "yours", and is reviewable by any
        self.authors[key] = f"{facts.worker} of {facts.run}" if inherited else facts.worker
        if facts.person:
            self.people[key] = facts.person
        for path in facts.written:
            if path.split("/")[0] in ITEM_FOLDERS:
                index.items.pop(path, None)  # a rewritten item moves to the end: newest last
                index.items[path] = key
        for path in facts.deleted:
            index.items.pop(path, None)
        self.cited.update(facts.cited)
        if inherited:
            self.inherited[key] = facts.run
            return
        self.built_on.update(c for c in facts.cited if c in self.inherited)
        if facts.nominates:
            index.nominations[facts.nominates] += 1
            index.nominators.add(facts.worker)
        if facts.kind in (Kind.ATTEMPT, Kind.CODE):
            self.answered.update(facts.cited)
        if facts.reviews:
            shown = next((f"problems/{facts.problem}/{f}" for f in facts.written if f.startswith("reviews/")), "")
            review = Review(facts.worker, facts.episode, facts.verdict, key, shown, person=bool(facts.person))
            self._review(index, review, facts.reviews)

    @staticmethod
    def _review(index: ProblemIndex, review: Review, candidate: str) -> None:
        """Keep `review` unless its worker has a later one of `candidate` (by episode number:
        two branches may reach main in either order)."""
        by = index.reviews.setdefault(candidate, {})
        earlier = by.get(review.worker)
        if earlier is None or episode_order(earlier.episode) <= episode_order(review.episode):
            by.pop(review.worker, None)
            by[review.worker] = review

    def copy(self) -> MemoryIndex:
        """The whole index as it stands, in maps of its own (under `lock` when another thread
        takes commits in): a writer reads the copy at leisure while the run goes on. The
        values are shared: a commit's files, a review, never change once taken in."""
        problems = _problems()
        for pid, own in self.problems.items():
            problems[pid] = ProblemIndex(dict(own.items), Counter(own.kinds), Counter(own.nominations),
                                         set(own.nominators), {c: dict(by) for c, by in own.reviews.items()})
        return MemoryIndex(problems=problems, cited=Counter(self.cited), files_of=dict(self.files_of),
                           candidate_paths=dict(self.candidate_paths), authors=dict(self.authors),
                           answered=set(self.answered), people=dict(self.people),
                           inherited_runs=self.inherited_runs, inherited=dict(self.inherited),
                           built_on=Counter(self.built_on), seen_tip=self.seen_tip, taken=set(self.taken))

    def pinned(self, problem: str) -> MemoryIndex:
        """`problem`'s part of the index as it stands now, frozen: one step's view of main at
        `seen_tip`, which the merger's later updates do not change (under `lock`, which an
        update holds while it takes its commits in, so the copy is never taken halfway through
        one). The maps kept for every
        commit (citations, files, authors) are shared: they only grow, and the problem's own
        items, votes and reviews say which of their commits the view holds. One copy per
        problem and tip, kept for the steps that ask next."""
        kept = self.viewed(problem)
        if kept is not None:
            return kept
        own = self.problems[problem]
        frozen = ProblemIndex(dict(own.items), Counter(own.kinds), Counter(own.nominations), set(own.nominators),
                              {c: dict(by) for c, by in own.reviews.items()}, dict(own.derived))
        part = MemoryIndex(cited=self.cited, files_of=self.files_of, candidate_paths=self.candidate_paths,
                           authors=self.authors, answered=self.answered,
                           people=self.people, inherited_runs=self.inherited_runs, inherited=self.inherited,
                           seen_tip=self.seen_tip, lock=self.lock)  # the maps it shares are guarded by the one lock
        part.problems[problem] = frozen
        self.views[problem] = part
        return part

    def viewed(self, problem: str) -> MemoryIndex | None:
        """`problem`'s frozen part at `seen_tip` if `pinned` took one, else None. Safe from
        another thread than the updates': a view is a copy no update changes, and one taken at
        the tip an update is leaving is still that tip's whole view until `seen_tip` moves."""
        kept = self.views.get(problem)
        return kept if kept is not None and kept.seen_tip == self.seen_tip else None

    def mark(self, commit: str) -> str:
        """What the item list says of `commit`'s origin: "by a person", "inherited" (its author
        names the run: `w01 of <run>`), or "" for this run's workers' work."""
        if commit in self.people:
            return "by a person"
        return "inherited" if commit in self.inherited else ""

    def reviews_of(self, problem: str, candidate: str, people: bool = True) -> list[Review]:
        """The reviews of `candidate` that count: the latest by each worker but its author; a
        person's only with `people` (`Rule.people_count`; shown to workers in either case)."""
        author = self.authors.get(candidate)
        by = self.problems[problem].reviews.get(candidate, {})
        return [r for r in by.values() if r.worker != author and (people or not r.person)]

    def candidates(self, problem: str) -> dict[str, str]:
        """Candidate path (an attempt file or `code/<slug>`) -> its commit, as `resolve` names
        it by path, in the order the items were first written (oldest first). A codebase's commit
        is the newest that wrote one of its files: its tree holds the codebase as it is now.
        Kept with the items until they change (shared: read it, never change it)."""
        own = self.problems[problem]
        kept = own.derived
        found: dict[str, str] | None = kept.get("candidates")
        if found is None:
            found = {}
            for path, commit in own.items.items():
                if path.startswith(CANDIDATE_FOLDERS):  # a codebase is the newest commit that wrote any of its files
                    found[candidate_path(path)] = commit
            kept["candidates"] = found
        return found

    def path_of(self, commit: str) -> str | None:
        """The candidate `commit` wrote, below its problem's folder (`attempts/<file>` or
        `code/<slug>`); None when the index knows no candidate of that commit."""
        return self.candidate_paths.get(commit)

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
            prefix = ref.lower()
            current = [(c, p) for p, c in self.candidates(problem).items() if c.startswith(prefix)]
            if len(current) == 1:  # a candidate as it stands, the usual case: found without a walk of the run
                return current[0]
            with self.lock:
                found = [(c, files) for c, (owner, files) in self.files_of.items()
                         if owner == problem and c.startswith(prefix)]
            for commit, files in found:
                shown = [f for f in files if f.startswith(CANDIDATE_FOLDERS)]
                if shown:
                    return commit, candidate_path(shown[0])
        return None
