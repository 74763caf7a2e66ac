"""What a problem needs next, and from whom: one rule for the state's "most useful next" and
for the scheduler's choice of where the episodes left are spent.

`next_task` names the most useful step for one worker on one problem, ranked by how directly it
leads to a selection: a review that counts toward verifying a candidate (the candidate nearest
to verification first), a nomination where nominations can still change the outcome, a revision
of a candidate a critical review blocks, and otherwise an attempt. Its `value` orders the
scheduler's picks; 0 means the worker has nothing useful to do there (its only open task would
be reviewing its own work), and the scheduler sends it elsewhere or lets it wait.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from gitswarm.domain import selection
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.resources import render

REVIEW, VERIFY, NOMINATE, REVISE, ATTEMPT = "review", "verify", "nominate", "revise", "attempt"
ASSIGNED = "assigned"
"""The state's word for an episode that may not review, on a problem whose next step is a review
the scheduler assigns to a review episode: nothing there needs it."""
FILLER = 1
"""The value of a step that may still help but leads to no selection by itself: another attempt
beside candidates that wait for other workers' reviews, or a review whose missing passes the
episodes in flight there may already give. The scheduler starts one only when nothing is in
flight (the episodes in flight may change what is worth doing)."""
SECOND = 1.5
"""The value of a second attempt beside a first one being written, in the swarm while the
problem has fewer episodes than its share of the workers: worth less than a first (it may
duplicate it), worth more than a filler (two independent tries, at a price)."""


@dataclass(frozen=True)
class Task:
    """One worker's most useful step on one problem."""

    action: str
    """`review` (a candidate no other worker has reviewed), `verify` (one short of K passes),
    `nominate`, `revise`, or `attempt` (a new candidate: the first, or one beside the others)."""
    value: float
    """How directly it leads to a selection; 0: nothing this worker could usefully do here."""
    path: str = ""
    commit: str = ""
    passes: int = 0
    nominations: int = 0
    review_episode: str = ""
    review_commit: str = ""


def next_task(index: MemoryIndex, problem: str, worker: str, rule: Rule, busy: str = "",
              in_flight: int = 0, tight: bool = False, reviews: bool = True, landing: int = 0,
              share: int = 1) -> Task:
    """The most useful next step of `worker` on `problem`. `busy` holds what the other episodes
    in flight there announced (a candidate named in it is being worked on); `in_flight` counts
    them and the finished work not merged yet, so that reviews already under way are not asked
    for twice and a first attempt under way is not repeated blindly; `landing` counts the
    finished work among them. Another attempt is a filler beside a first one that is about to
    land (`landing`), beside a candidate waiting for a review, in a run without nominations
    (best-of-n) beside one under way (there the next attempt waits for the first's verdict, and
    is worth a first one again once every candidate has failed), and with a `tight` budget (the
    budget left cannot pay for a selection on every open problem); in the swarm, beside a first
    one being written, it is worth less than a first one (diversity, at a price) while the
    problem has fewer episodes than its `share` of the workers, and a filler beyond.
    A run without nominations (best-of-n) asks for no nomination and no revision: each attempt
    there is independent of the others. Without `reviews` (an episode that may not review: the
    run assigns reviews as episodes of their own), the step after the reviews."""
    return best_task(index, problem, [worker], rule, busy, in_flight, tight, reviews, landing, share)[1]


def best_task(index: MemoryIndex, problem: str, workers: Sequence[str], rule: Rule, busy: str = "",
              in_flight: int = 0, tight: bool = False, reviews: bool = True, landing: int = 0,
              share: int = 1) -> tuple[str, Task]:
    """The worker of `workers` (at least one) whose `next_task` on `problem` is worth the most,
    the first of them in a tie, and that task: what the scheduler asks of every open problem at
    each pick. The workers are answered a group at a time, each group given one step alike
    (`_groups`), so that its cost is that of the steps, not of the workers: in a long run every
    free worker has written or reviewed something on every problem, and a `next_task` for each
    of them at each pick made the cost per episode grow with the run."""
    best: tuple[Task, str] | None = None
    for task, taker in _groups(index, problem, list(workers), rule, busy, in_flight, tight, reviews, landing, share):
        if best is None or task.value > best[0].value or (
                task.value == best[0].value and workers.index(taker) < workers.index(best[1])):
            best = task, taker
    assert best is not None, "every worker is in a group"
    return best[1], best[0]


def _groups(index: MemoryIndex, problem: str, workers: list[str], rule: Rule, busy: str, in_flight: int,
            tight: bool, reviews: bool, landing: int, share: int) -> Iterator[tuple[Task, str]]:
    """`workers` split by their next step on `problem`, in the order the steps are weighed, each
    group's step with the first of its workers (the one a tie goes to): a nomination goes to
    every worker but the problem's nominators, the review of a candidate to every worker but its
    author and its reviewers (the candidates in the order a worker takes them: most passes first,
    the newest of a tie), and the steps after the reviews to all the rest alike, but for the
    author of every candidate still alive, who has nothing to do there. A group is found by its
    first worker, and only the workers left after it are listed: at a pick nearly every free
    worker is in the first group."""
    verify, facts = rule.verify, _facts_of(index, problem, rule)
    found, votes = facts.found, index.problems[problem]
    if facts.verified and facts.matter:
        path, commit = max(facts.verified, key=lambda pc: votes.nominations[pc[1]])
        taker = _first_but(workers, votes.nominators)
        workers = [w for w in workers if w in votes.nominators]
        if taker is not None:
            yield Task(NOMINATE, 2.5, path, commit, nominations=votes.nominations[commit]), taker
    reviewing = _named(facts, busy) if reviews and workers else {}
    for path, commit in facts.by_passes if reviews else ():
        if not workers:
            return
        passes = found[commit].passes
        if reviewing.get(path, 0) >= max(verify - passes, 1):
            continue
        done = votes.reviews.get(commit, {}).keys() | {index.authors.get(commit, "")}  # its reviewers and author
        taker = _first_but(workers, done)
        if taker is not None:
            workers = [w for w in workers if w in done]
            value = 3 + passes / max(verify, 1)
            if verify and in_flight >= verify - passes:  # as many episodes there as passes are missing
                value = FILLER
            if any(not found[c].critical and found[c].passes > passes for c in (facts.paths[p] for p in reviewing)):
                value = FILLER  # the leader's verdict is coming: a rival's review matters only if it fails
            yield Task(VERIFY if passes else REVIEW, value, path, commit, passes), taker
    if not workers:
        return
    for path, commit, critical in facts.blocked if rule.nominations else ():
        answered = commit in index.answered or any(r.commit in index.answered for r in critical)
        if not answered and path not in busy:
            yield Task(REVISE, 2, path, commit, review_episode=critical[0].episode,
                       review_commit=critical[0].commit), workers[0]
            return
    if not facts.candidates:  # a first attempt; beside one under way, a second one only in the swarm
        wait = landing or tight or not rule.nominations or in_flight >= share
        yield Task(ATTEMPT, 2 if not in_flight else FILLER if wait else SECOND), workers[0]
        return
    if facts.sole in workers:  # its only open task would be reviewing its own work
        yield Task(ATTEMPT, 0), facts.sole
        workers = [w for w in workers if w != facts.sole]
        if not workers:
            return
    if not rule.nominations and facts.all_failed:  # the leader failed
        yield Task(ATTEMPT, FILLER if in_flight else 2), workers[0]
        return
    yield Task(ATTEMPT, FILLER), workers[0]


def _first_but(workers: list[str], these: Collection[str]) -> str | None:
    """The first of `workers` not among `these`."""
    return next((w for w in workers if w not in these), None)


@dataclass(frozen=True)
class _Facts:
    """What `next_task` reads of one problem whatever the worker, kept with the problem's items
    until they change (`ProblemIndex.derived`): a pick asks for every open problem's, and a walk
    of each problem's candidates at every pick made a run's cost per episode grow with its size."""

    candidates: tuple[tuple[str, str], ...]
    """(path, commit), newest first."""
    paths: dict[str, str]
    """Path -> commit."""
    found: dict[str, selection.Standing]
    verified: tuple[tuple[str, str], ...]
    """The verified candidates, newest first."""
    matter: bool
    """Nominations can still change the outcome (`selection.nominations_matter`)."""
    by_passes: tuple[tuple[str, str], ...]
    """The candidates a review may still count for (no critical review, and short of K passes;
    with K = 0: not reviewed at all), most passes first, the newest of a tie first: the order a
    reviewer takes them."""
    blocked: tuple[tuple[str, str, tuple], ...]
    """(path, commit, its critical reviews) of the candidates a critical review blocks, newest first."""
    sole: str | None
    """The author of every candidate still alive (not critical, short of K passes), when one
    worker wrote them all: its only open task there would be reviewing its own work."""
    all_failed: bool
    """Every candidate has a critical review."""


def _facts_of(index: MemoryIndex, problem: str, rule: Rule) -> _Facts:
    kept = index.problems[problem].derived
    facts: _Facts | None = kept.get(("tasks", rule))
    if facts is None:
        facts = kept[("tasks", rule)] = _facts(index, problem, rule)
    return facts


def _facts(index: MemoryIndex, problem: str, rule: Rule) -> _Facts:
    verify = rule.verify
    candidates = tuple(index.candidates(problem).items())[::-1]
    found = {s.commit: s for s in selection.standings(index, problem, rule)}
    verified = {s.commit for s in selection.verified_of(found.values(), rule)} if verify else set()
    unsettled = tuple((p, c) for p, c in candidates if not found[c].critical
                      and (found[c].passes < verify or (not verify and not index.reviews_of(problem, c))))
    blocked = []
    for path, commit in candidates:
        critical = tuple(r for r in index.reviews_of(problem, commit) if r.verdict == "critical")
        if critical:
            blocked.append((path, commit, critical))
    writers = {index.authors.get(c, "") for _, c in candidates if not found[c].critical and found[c].passes < verify}
    sole = writers.pop() if len(writers) == 1 else None
    by_passes = tuple(sorted(unsettled, key=lambda pc: -found[pc[1]].passes))  # stable: the newest of a tie first
    return _Facts(candidates, dict(candidates), found, tuple((p, c) for p, c in candidates if c in verified),
                  selection.nominations_matter(found.values(), rule), by_passes, tuple(blocked), sole,
                  all(found[c].critical for _, c in candidates))


def _named(facts: _Facts, busy: str) -> dict[str, int]:
    """How many times the episodes in flight name each candidate in what they announced (a path
    as a whole word); only the candidates named at all."""
    if not busy:
        return {}
    return {p: n for p in facts.paths if p in busy and (n := len(re.findall(rf"\b{re.escape(p)}\b", busy)))}


def needs(index: MemoryIndex, problem: str, rule: Rule, settled: bool, writing: Sequence[dict] = ()) -> str:
    """What the problem still needs before its solution is chosen, in one sentence
    (`problem_needs.md.j2`); `writing`: the other episodes in flight there (worker, episode,
    step), named where the first attempt is what it needs (one of them is writing it)."""
    kept = index.problems[problem].derived  # kept with the problem's items: every step of every episode asks
    need: dict | None = kept.get(("needs", rule, settled))
    if need is None:
        need = kept[("needs", rule, settled)] = _need(index, problem, rule, settled)
    return render("problem_needs.md.j2", writing=list(writing), **need).strip()


def _need(index: MemoryIndex, problem: str, rule: Rule, settled: bool) -> dict:
    """The case of `problem_needs.md.j2` the problem is in, and the values its sentence names:
    read from the problem's items alone (their standings, candidates and authors)."""
    found = selection.standings(index, problem, rule)
    paths = {c: p for p, c in index.candidates(problem).items()}
    choice = selection.choose(found, rule)
    if settled and choice is not None:
        return {"case": "settled", "path": paths.get(choice.commit, choice.commit[:12])}
    if not paths:
        return {"case": "first"}
    verified = selection.verified_of(found, rule)
    if rule.verify == 0:
        return {"case": "plurality", "settle_nominations": rule.settle_nominations}
    if len(verified) > 1:
        most = max(s.nominations for s in verified)
        return {"case": "nominations", "verified": len(verified), "more": rule.settle_nominations - most}
    short = [s for s in found if s.commit in paths and not s.critical]
    if not short:
        return {"case": "revision"}
    best = max(short, key=lambda s: (s.passes, s.order))
    return {"case": "reviews", "path": paths[best.commit], "missing": rule.verify - best.passes,
            "author": index.authors.get(best.commit) or "its author"}
