"""The review trail of every candidate of a problem, the rejected ones included, and the
revision chain: which candidate revises which, answering which review.

Read from the history the report walks anyway (`graph.load`): a candidate is an attempt or
code commit; its reviews are the review commits whose record (`commitmeta.ReviewRecord.reviews`)
names it; a candidate *revises* the candidates it cites (`informed_by`) and *answers* the
reviews it cites, as the index counts a critical review answered.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gitswarm.domain.candidate import Candidate
from gitswarm.domain.grade import describe
from gitswarm.domain.kinds import CANDIDATE_FOLDERS, candidate_path, episode_order
from gitswarm.domain.review import Review
from gitswarm.readmodel.model import ProblemState
from gitswarm.report.graph import Graph, Node

CANDIDATE_KINDS = ("attempt", "code")


@dataclass(frozen=True)
class Answered:
    """A review a revision answers (cites)."""

    commit: str
    episode: str
    verdict: str
    of: str
    """The path of the candidate that review judged."""


@dataclass(frozen=True)
class CandidateTrail:
    """One candidate's story: who wrote it, what it revises, its reviews and where it ended."""

    path: str
    commit: str
    episode: str
    worker: str
    revises: list[str]
    """The paths of the candidates it cites."""
    answers: list[Answered]
    """The reviews it cites."""
    reviews: list[Review]
    """Every review of it, oldest first (`counted`: the read model counts it, the latest review
    by a worker other than the candidate's author)."""
    nominations: int
    verified: bool
    selected: bool
    grade: str
    """Its grade as `status` shows it ("-" when none)."""
    grade_scripted: bool
    """That grade is the demo's scripted judge's."""

    @property
    def outcome(self) -> str:
        """selected, rejected (a critical review), verified, or open."""
        if self.selected:
            return "selected"
        if any(r.verdict == "critical" and r.counted for r in self.reviews):
            return "rejected"
        return "verified" if self.verified else "open"

    def as_dict(self) -> dict:
        return asdict(self) | {"outcome": self.outcome}


def trails(graph: Graph, problem: ProblemState, scripted) -> list[CandidateTrail]:
    """Every candidate of `problem` in the history, oldest first; `scripted(grade)` says whether
    the demo's scripted judge gave a grade."""
    known = {c.commit: c for c in problem.candidates if c.commit}
    nodes = [n for n in graph.nodes.values() if n.problem == problem.id and n.kind in CANDIDATE_KINDS]
    nodes.sort(key=lambda n: episode_order(n.episode))
    paths = {n.id: _path(problem.id, n) for n in nodes}
    reviews = [n for n in graph.nodes.values() if n.problem == problem.id and n.kind == "review" and n.reviews]
    selected = problem.selected.candidate if problem.selected else None
    return [_trail(graph, n, paths, reviews, known.get(n.id), n.id == selected, scripted) for n in nodes]


def _trail(graph: Graph, node: Node, paths: dict[str, str], reviews: list[Node], held: Candidate | None,
           selected: bool, scripted) -> CandidateTrail:
    counted = {e.commit for e in held.trail if e.counted} if held else set()
    people = {e.commit for e in held.trail if e.person} if held else set()
    mine = sorted((r for r in reviews if r.reviews == node.id), key=lambda r: episode_order(r.episode))
    lines = [Review(r.worker, r.episode, r.verdict, r.id, _review_path(r), r.id in counted, r.id in people)
             for r in mine]
    cited = [graph.nodes[c] for c in node.cited if c in graph.nodes]
    answers = [Answered(c.id, c.episode, c.verdict, paths.get(c.reviews, c.reviews[:12]))
               for c in cited if c.kind == "review" and c.problem == node.problem]
    revises = [paths[c.id] for c in cited if c.id in paths]
    return CandidateTrail(paths[node.id], node.id, node.episode, node.worker, revises, answers, lines,
                          held.nominations if held else 0, held.verified if held else False, selected,
                          describe(held.grade) if held else "-", scripted(held.grade) if held else False)


def _path(problem: str, node: Node) -> str:
    files = [f for f in node.files if f.startswith(CANDIDATE_FOLDERS)]
    return f"problems/{problem}/{candidate_path(files[0])}" if files else node.id[:12]


def _review_path(node: Node) -> str:
    found = [f for f in node.files if f.startswith("reviews/")]
    return f"problems/{node.problem}/{found[0]}" if found else ""
