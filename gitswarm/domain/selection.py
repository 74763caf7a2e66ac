"""Selection, verification and settling: which candidate the rule picks, and when a problem
is settled.

One rule, over the index of main (`domain.index.MemoryIndex`), for the engine and the read model:

- a candidate is *verified* when it has at least K `pass` reviews from distinct workers other
  than its author and no `critical` one (K = `SolveConfig.verify`; K = 0 verifies every
  candidate: plain plurality). With `verify_in_row` the K passes must be its latest reviews: a
  `gaps` review restarts the count. A critical review blocks the attempt it reviews for good; a
  revision is a new attempt, which earns its own passes. A person's review (`gitswarm review`)
  counts so only when the run's `person_reviews` is `counts` (`Rule.people_count`);
- the leader is the verified candidate with the most nominations, ties going to the referee's
  score, then to more passes, then to the commit id. When no candidate is verified, the
  best-reviewed one leads, marked unverified: the fewest critical reviews first (never one
  with more over one with fewer), then the most passes, the most nominations, the fewest
  `gaps` reviews, the newest. A leader with a critical review is *rejected by reviews*: the
  least rejected of candidates that all were;
- a problem *settles* when its leader is verified and either has no verified rival (K > 0:
  nominations could not change the outcome) or has `settle_nominations` nominations (several
  verified candidates, or K = 0, where nominations are the plurality that chooses). A run
  without nominations (`Rule.nominations` off: best-of-n) settles on its first verified leader.

`rule.Rule` holds the rule's settings, with their defaults; `settled` is the one place that
says which problems are settled (the engine, the merger, a remote worker and the read model
all call it). Pure: writing the selected candidate's SOLUTION.md is `engine.selection.select`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import Verification, episode_order
from gitswarm.domain.review import Review
from gitswarm.domain.rule import Rule


@dataclass(frozen=True)
class Selection:
    """A problem's selected solution: what `engine.selection.select` writes in SOLUTION.md on
    main, and what the read model reads back from it."""

    candidate: str
    """The selected candidate's commit."""
    path: str
    """Its path in the repository (`problems/<id>/...`)."""
    nominations: int | None
    """Its nominations when it was selected (None: a SOLUTION.md that does not say)."""
    verified: bool | None = None
    """Whether it was verified (None: a SOLUTION.md that does not say)."""
    rejected: bool = False
    """Not verified, with a critical review: every candidate had one (`Verification.REJECTED`)."""
    problem: str = ""
    commit: str = ""
    """The commit on main that wrote SOLUTION.md ("" when read back from it)."""


@dataclass(frozen=True)
class Standing:
    """What selection knows of one candidate."""

    commit: str
    nominations: int = 0
    passes: int = 0
    """`pass` reviews by distinct workers other than its author (their latest review of it);
    with `Rule.in_row`, only those after its latest `gaps` review."""
    critical: int = 0
    """`critical` reviews, counted the same way."""
    gaps: int = 0
    """`gaps` reviews, counted the same way."""
    order: int = 0
    """Its place among the problem's candidates, oldest first (the newest wins a last tie)."""


@dataclass(frozen=True)
class Choice:
    """The leader of a problem, and whether it is verified."""

    commit: str
    nominations: int
    verified: bool
    passes: int
    critical: int = 0
    """Its critical reviews (counted as `Standing.critical`)."""

    @property
    def mark(self) -> Verification:
        """What SOLUTION.md and the views call it."""
        if self.verified:
            return Verification.VERIFIED
        return Verification.REJECTED if self.critical else Verification.UNVERIFIED


def choose(standings: Iterable[Standing], rule: Rule, scores: dict[str, float] | None = None) -> Choice | None:
    """The leader among `standings` by the module's rule: the best verified candidate, else the
    best-reviewed one (the fewest critical reviews first), unverified or rejected by reviews;
    None only when there is no candidate at all."""
    scores = scores or {}
    pool = list(standings)
    verified = verified_of(pool, rule)
    if verified:
        best = min(verified, key=lambda s: (-s.nominations, -scores.get(s.commit, -1.0), -s.passes, s.commit))
    elif pool:
        best = min(pool, key=lambda s: (s.critical, -s.passes, -s.nominations, s.gaps,
                                        -scores.get(s.commit, -1.0), -s.order, s.commit))
    else:
        return None
    return Choice(best.commit, best.nominations, bool(verified), best.passes, 0 if verified else best.critical)


def verified_of(standings: Iterable[Standing], rule: Rule) -> list[Standing]:
    """The candidates selection counts as verified: K passes and no critical review; with K = 0,
    the nominated ones (plain plurality: a candidate nobody voted for is chosen by nobody)."""
    return [s for s in standings if rule.is_verified(s.passes, s.critical) and (rule.verify or s.nominations)]


def nominations_matter(standings: Iterable[Standing], rule: Rule) -> bool:
    """Whether a nomination can still change the outcome: in a run with nominations, with K = 0
    (plurality) or when several candidates are verified. One verified candidate with no
    verified rival is the problem's result without any."""
    return rule.nominations and (rule.verify == 0 or len(verified_of(standings, rule)) > 1)


def passes(reviews: Iterable[Review], in_row: bool) -> int:
    """The `pass` reviews among `reviews` (each worker's latest), or with `in_row` those after
    the latest `gaps` review, the reviews taken in the order of their episodes."""
    verdicts = [r.verdict for r in sorted(reviews, key=lambda r: episode_order(r.episode))]
    if in_row and "gaps" in verdicts:
        verdicts = verdicts[len(verdicts) - verdicts[::-1].index("gaps"):]
    return verdicts.count("pass")


def standings(index: MemoryIndex, problem: str, rule: Rule) -> tuple[Standing, ...]:
    """Every candidate of `problem` the index knows, and every nominated commit (kept with the
    problem's items until they change: `ProblemIndex.derived`; read them, never change them)."""
    kept = index.problems[problem].derived
    key = ("standings", rule.people_count, rule.in_row)
    found: tuple[Standing, ...] | None = kept.get(key)
    if found is None:
        found = kept[key] = _standings(index, problem, rule)
    return found


def _standings(index: MemoryIndex, problem: str, rule: Rule) -> tuple[Standing, ...]:
    votes = index.problems[problem].nominations
    commits = dict.fromkeys([*index.candidates(problem).values(), *votes])
    found = []
    for order, commit in enumerate(commits):
        reviews = index.reviews_of(problem, commit, rule.people_count)
        verdicts = [r.verdict for r in reviews]
        found.append(Standing(commit, votes.get(commit, 0), passes(reviews, rule.in_row),
                              verdicts.count("critical"), verdicts.count("gaps"), order))
    return tuple(found)


def leader(index: MemoryIndex, problem: str, rule: Rule, scores: dict[str, float] | None = None) -> Choice | None:
    return choose(standings(index, problem, rule), rule, scores)


def settles(found: Sequence[Standing], rule: Rule, scores: dict[str, float] | None = None) -> bool:
    """Whether a problem whose candidates stand so is settled: its leader is verified and has no
    verified rival (K > 0), or has the nominations that settle it."""
    choice = choose(found, rule, scores)
    if choice is None or not choice.verified:
        return False
    return not nominations_matter(found, rule) or choice.nominations >= rule.settle_nominations


def settled(index: MemoryIndex, problems: list[str], rule: Rule) -> set[str]:
    """Problems settled now: no more episodes go there. (The referee's scores only break ties
    between verified leaders, so they cannot change whether a problem is settled.)"""
    return {p for p in problems if settles(standings(index, p, rule), rule)}


def standing_of(index: MemoryIndex, problems: list[str], rule: Rule) -> tuple[set[str], set[str]]:
    """The problems settled now, and those with a verified candidate (settled or not): what the
    run's view (`RunView.settle`) shows every step."""
    done, verified = set(), set()
    for p in problems:
        found = standings(index, p, rule)
        if settles(found, rule):
            done.add(p)
        if rule.verify and verified_of(found, rule):
            verified.add(p)
    return done, verified
