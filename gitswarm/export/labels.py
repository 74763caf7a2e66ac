"""What a run's git says about each episode: the labels every exported record carries.

Read once per export (`read_facts`): the ledger's episode records, one walk of the history
reachable from main and the unmerged branches (`report.graph.load`, whose fields come from
each commit's record, `memory.commitmeta.decode`), the read model (selection, verification,
nominations on main) and the grades. Each label can be recomputed with git alone
(`tests/test_export.py` does): an episode's record is a file of `refs/gitswarm/ledger`,
its commit's record says its kind and what it cites, reviews and nominations name the
commits they judge, SOLUTION.md on main names the selected candidate, and the grades are
files of `refs/gitswarm/grades`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from gitswarm.domain.episode import EpisodeRecord
from gitswarm.domain.grade import Grade
from gitswarm.export.credit import RULES, CreditGraph, Work, in_ancestry
from gitswarm.memory import commitmeta, ledgerbook
from gitswarm.memory.repo import Memory
from gitswarm.memory.snapshot import Snapshot
from gitswarm.readmodel.model import ProblemState
from gitswarm.readmodel.read import read_run, shown_grade
from gitswarm.referee.grades import GradeStore
from gitswarm.report.graph import Graph, Node, load

OUTCOMES = {"contribute": "contributed", "nominate": "nominated", "abstain": "abstained", "failed": "failed",
            "stopped": "stopped", "running": "running"}
"""The ledger's status of an episode -> its outcome label (stopped: cut short by the run's end;
running: cut off by a crash the run was not resumed after)."""
CANDIDATE_KINDS = ("attempt", "code")


@dataclass(frozen=True)
class RunFacts:
    """Everything the labels are read from, read once."""

    run: str
    records: list[EpisodeRecord]
    """The worker episodes, in order (the merger's record left out)."""
    graph: Graph
    problems: dict[str, ProblemState]
    grades: dict[str, Grade]
    """Each graded candidate commit's grade, as `status` shows it."""
    credit: dict[str, float]
    """Each commit's credit under the chosen rule (`export.credit`)."""
    ancestry: frozenset[str]
    """The commits in the citation closure of a problem's selected solution."""
    rule: str
    models: dict[str, str]
    """Each episode commit's model (its record's `model`)."""


def read_facts(memory: Memory, rule: str = "ancestry") -> RunFacts:
    """The run's facts, with the credit of rule `rule` (a name of `export.credit.RULES`)."""
    if rule not in RULES:
        raise ValueError(f"no credit rule {rule!r}; choose one of {', '.join(RULES)}")
    every = ledgerbook.episodes(memory)
    records = sorted((r for r in every.values() if r.episode != "merger"), key=lambda r: r.episode)
    snapshot = memory.snapshot()
    graph = load(snapshot)
    problems = {p.id: p for p in read_run(memory).problems}
    store = GradeStore(memory)
    grades: dict[str, Grade] = {}
    credit: dict[str, float] = {}
    ancestry: set[str] = set()
    for pid, state in problems.items():
        by_candidate: dict[str, list[Grade]] = defaultdict(list)
        for grade in store.for_problem(pid):
            by_candidate[grade.candidate].append(grade)
        shown = {c: g for c, gs in by_candidate.items() if (g := shown_grade(gs)) is not None}
        grades.update(shown)
        problem_graph = credit_graph(graph, pid, state.selected.candidate if state.selected else None, shown)
        credit.update(RULES[rule](problem_graph))
        ancestry |= in_ancestry(problem_graph)
    models = {r.commit: _model(snapshot, r.commit) for r in records if r.commit}
    return RunFacts(memory.run_id, records, graph, problems, grades, credit, frozenset(ancestry), rule, models)


def credit_graph(graph: Graph, problem: str, solution: str | None, grades: dict[str, Grade]) -> CreditGraph:
    """One problem's commits as the credit rules see them."""
    works = [Work(n.id, n.cited, n.reviews, n.verdict) for n in graph.nodes.values() if n.problem == problem]
    fractions = {c: g.score / g.max for c, g in grades.items() if g.score is not None and g.max}
    return CreditGraph.of(works, solution, fractions)


def _model(snapshot: Snapshot, commit: str) -> str:
    try:
        return getattr(commitmeta.decode(snapshot.commit(commit).message), "model", "")
    except (KeyError, ValueError):
        return ""


@dataclass(frozen=True)
class Links:
    """Who cites, reviews and nominates each commit, from one pass over the graph."""

    citers: Counter
    reviews: dict[str, list[Node]]
    nominations: Counter

    @classmethod
    def of(cls, graph: Graph) -> Links:
        citers: Counter = Counter()
        reviews: dict[str, list[Node]] = defaultdict(list)
        nominations: Counter = Counter()
        for node in graph.nodes.values():
            citers.update(set(node.cited) - {node.id})
            if node.kind == "review" and node.reviews:
                reviews[node.reviews].append(node)
            if node.kind == "nomination" and node.candidate:
                nominations[node.candidate] += 1
        return cls(citers, reviews, nominations)


def labels(facts: RunFacts, links: Links, record: EpisodeRecord) -> dict:
    """The labels of one episode (docs/exports.md)."""
    node = facts.graph.nodes.get(record.commit or "")
    problem = facts.problems.get(record.problem)
    selected = problem.selected.candidate if problem and problem.selected else None
    commit = record.commit or None
    return {
        "run": facts.run, "episode": record.episode, "problem": record.problem,
        "kind": problem.kind if problem else None, "worker": record.worker,
        "model": facts.models.get(commit or "") or None,
        "outcome": OUTCOMES.get(record.status, record.status), "failure": record.failure or None,
        "reason": record.note or None,
        "contribution": {"kind": node.kind if node else None, "commit": commit,
                         "subject": node.subject if node else None} if commit else None,
        "cites": list(node.cited) if node else [],
        "reviewed": {"candidate": node.reviews, "verdict": node.verdict} if node and node.kind == "review" else None,
        "nominated": node.candidate or None if node and node.kind == "nomination" else None,
        "reviews_received": [{"episode": r.episode, "worker": r.worker, "verdict": r.verdict, "commit": r.id}
                             for r in links.reviews.get(commit or "", [])],
        "verified": _verified(problem, node) if node and node.kind in CANDIDATE_KINDS else None,
        "nominations": links.nominations.get(commit or "", 0),
        "selected": bool(commit) and commit == selected,
        "in_ancestry": bool(commit) and commit in facts.ancestry,
        "built_on": links.citers.get(commit or "", 0),
        "candidate_grade": _grade(facts.grades.get(commit or "")),
        "grade": _grade(facts.grades.get(selected or "")),
        "credit": facts.credit.get(commit or "", 0.0), "credit_rule": facts.rule,
        "tokens_in": record.tokens_in, "tokens_out": record.tokens_out, "calls": record.calls,
    }


def _verified(problem: ProblemState | None, node: Node) -> bool:
    found = next((c for c in problem.candidates if c.commit == node.id), None) if problem else None
    return bool(found and found.verified)


def _grade(grade: Grade | None) -> dict | None:
    if grade is None:
        return None
    fraction = grade.score / grade.max if grade.score is not None and grade.max else None
    return {"score": grade.score, "max": grade.max, "fraction": fraction, "grader": grade.grader,
            "model": grade.model}
