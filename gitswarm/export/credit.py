"""Credit from the commit graph: how much of a problem's grade each contribution earned.

A run's memory is a graph. Each contribution is a commit that cites (its record's
`informed_by`, `memory.commitmeta`) the commits it built on; a review names the candidate it
judged (`commitmeta.ReviewRecord.reviews`) and its verdict; the referee grades the selected
solution (SOLUTION.md on main) and any other candidate it was asked to. A *credit rule*
maps that graph to a number per commit; an episode's credit is the credit of its commit
(none without one). Every rule here is a small pure function of a `CreditGraph`, so it can
be tested on graphs built by hand.

`ancestry` (the default): the selected solution's grade g (its score over its maximum, 0
to 1) flows back along its citations. The solution receives g; a commit that received x
passes `DECAY` * x on, split equally among the commits it cites, so an ancestor at
distance d along one path of single citations receives g * DECAY**d. A commit reached by
several paths receives the sum over them. A commit outside the solution's ancestry (its
citation closure) receives nothing; so does every commit of a problem without a selected,
graded solution.

`ancestry+reviews`: `ancestry`, plus `REVIEW_SHARE` * (1 - a) to each review with the
verdict critical of a candidate graded a < `LOW_GRADE`: the review found a real error and
kept a bad attempt from being selected. A critical review of a candidate graded well, or
never graded, earns nothing by this term.

`step_rewards` spreads an episode's credit over its model calls for `--format steps`: the
whole credit is the reward of the last call (the one that made the commit), so every call's
undiscounted return is the episode's credit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

DECAY = 0.5
"""The share of its credit a commit passes to the commits it cites."""
LOW_GRADE = 0.5
"""A candidate graded below this fraction of its maximum was a bad attempt to block."""
REVIEW_SHARE = 0.5
"""A critical review of a bad attempt earns this times how bad it was (1 - its grade)."""


@dataclass(frozen=True)
class Work:
    """One commit of the graph as the credit rules see it."""

    id: str
    cites: tuple[str, ...] = ()
    """The commits its record names in `informed_by`, in order."""
    reviews: str = ""
    """On a review, the candidate commit it judged."""
    verdict: str = ""
    """On a review: pass, gaps or critical."""


@dataclass(frozen=True)
class CreditGraph:
    """One problem's commits, its selected solution and the grades (fractions of the maximum)."""

    works: dict[str, Work] = field(default_factory=dict)
    solution: str | None = None
    """The selected candidate's commit (SOLUTION.md's `candidate`), if any."""
    grades: dict[str, float] = field(default_factory=dict)
    """Each graded candidate's grade as a fraction of its maximum (0 to 1)."""

    @classmethod
    def of(cls, works: list[Work], solution: str | None = None, grades: dict[str, float] | None = None) -> CreditGraph:
        return cls({w.id: w for w in works}, solution, dict(grades or {}))


Rule = Callable[[CreditGraph], dict[str, float]]


def ancestry(graph: CreditGraph, decay: float = DECAY) -> dict[str, float]:
    """The solution's grade flowing back along citations (the module docstring): commit -> credit,
    only commits in the solution's ancestry listed."""
    grade = graph.grades.get(graph.solution or "")
    if graph.solution is None or grade is None:
        return {}
    inside = _closure(graph, graph.solution)
    waiting = {node: 0 for node in inside}
    for node in inside:
        for cited in set(_cites(graph, node)):
            waiting[cited] += 1
    credit = dict.fromkeys(inside, 0.0)
    credit[graph.solution] = grade
    ready = deque([graph.solution])
    while ready:  # Kahn's order: a commit passes its credit on once every citer has passed theirs
        node = ready.popleft()
        cites = _cites(graph, node)
        for cited in cites:
            credit[cited] += decay * credit[node] / len(cites)
        for cited in set(cites):
            waiting[cited] -= 1
            if waiting[cited] == 0:
                ready.append(cited)
    return credit


def in_ancestry(graph: CreditGraph) -> set[str]:
    """The selected solution's ancestry: its citation closure, itself included (empty without one)."""
    return _closure(graph, graph.solution) if graph.solution is not None else set()


def ancestry_reviews(graph: CreditGraph) -> dict[str, float]:
    """`ancestry`, plus the credit of critical reviews that blocked a candidate graded low."""
    credit = ancestry(graph)
    for work in graph.works.values():
        blocked = graph.grades.get(work.reviews) if work.verdict == "critical" else None
        if blocked is not None and blocked < LOW_GRADE:
            credit[work.id] = credit.get(work.id, 0.0) + REVIEW_SHARE * (1 - blocked)
    return credit


RULES: dict[str, Rule] = {"ancestry": ancestry, "ancestry+reviews": ancestry_reviews}
"""The rules `gitswarm export --credit` offers, by name."""


def step_rewards(credit: float, calls: int) -> list[float]:
    """Each model call's reward: the episode's credit on its last call, 0 before it."""
    return [0.0] * (calls - 1) + [credit] if calls > 0 else []


def _cites(graph: CreditGraph, node: str) -> tuple[str, ...]:
    work = graph.works.get(node)
    return tuple(c for c in work.cites if c != node) if work else ()


def _closure(graph: CreditGraph, start: str) -> set[str]:
    seen, todo = {start}, deque([start])
    while todo:
        for cited in _cites(graph, todo.popleft()):
            if cited not in seen:
                seen.add(cited)
                todo.append(cited)
    return seen
