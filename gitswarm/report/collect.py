"""Gather a run's report: per-problem results, cost, tokens, time, episodes, compounding."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from gitswarm.report.graph import Graph, compounding, load


@dataclass
class ProblemReport:
    """One problem's result and figures."""

    id: str
    selected: str | None
    """The selected candidate commit (from SOLUTION.md on main), or None."""
    selected_path: str | None
    nominations: dict[str, int]
    """Nominations per candidate commit."""
    grade: str
    episodes: int
    charged: int
    tokens: int
    cost_usd: float | None
    seconds: float
    """Worker time: the sum of the problem's episode durations."""
    contributions: int
    built_on: int
    in_ancestry: int
    built_on_share: float | None
    ancestry_share: float | None


@dataclass
class RunReport:
    """The whole report; `to_dict` is the JSON format."""

    run: str
    path: str
    episodes: int
    charged: int
    tokens: int
    cost_usd: float | None
    wall_seconds: float
    contributions: int
    built_on_share: float | None
    ancestry_share: float | None
    problems: list[ProblemReport] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    """The parts of every call's usage, the merger's and failed calls' too (`Totals.parts()`)."""

    def to_dict(self) -> dict:
        return asdict(self)


def collect(run: Path) -> tuple[RunReport, Graph]:
    """Read the run (main, unmerged branches, ledger, grades) without writing to it."""
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory

    memory = Memory(run)
    graph = load(memory.repo, [memory.main(), *memory.pending().values()])
    ledger = Ledger.load(memory)
    records = [r for key, r in ledger.episodes.items() if key != "merger"]
    problems = [_problem(memory, graph, p, [r for r in records if r.problem == p]) for p in memory.problems()]
    known = all(r.cost_known for r in records)
    started = [r.started for r in records]
    ended = [r.ended for r in records if r.ended]
    total = sum(p.contributions for p in problems)
    return RunReport(
        run=memory.run_id, path=str(run), episodes=len(records),
        charged=sum(p.charged for p in problems), tokens=sum(r.tokens_in + r.tokens_out for r in records),
        cost_usd=round(sum(r.cost_usd for r in records), 6) if known else None,
        wall_seconds=round(max(ended) - min(started), 3) if started and ended else 0.0,
        contributions=total,
        built_on_share=_share(sum(p.built_on for p in problems), total),
        ancestry_share=_share(sum(p.in_ancestry for p in problems), total),
        problems=problems, usage=ledger.totals.parts()), graph


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _problem(memory, graph: Graph, problem: str, records) -> ProblemReport:
    from gitswarm.engine.ledger import CHARGED

    candidate, path = _selected(memory, problem)
    figures = compounding(graph, problem, candidate)
    known = all(r.cost_known for r in records)
    return ProblemReport(
        id=problem, selected=candidate, selected_path=path, nominations=graph.nominations(problem),
        grade=_grade(memory, problem, candidate), episodes=len(records),
        charged=sum(r.status in CHARGED for r in records), tokens=sum(r.tokens_in + r.tokens_out for r in records),
        cost_usd=round(sum(r.cost_usd for r in records), 6) if known else None,
        seconds=round(sum((r.ended or r.started) - r.started for r in records), 3),
        contributions=figures.contributions, built_on=figures.built_on, in_ancestry=figures.in_ancestry,
        built_on_share=_share(figures.built_on, figures.contributions),
        ancestry_share=_share(figures.in_ancestry, figures.contributions))


def _selected(memory, problem: str) -> tuple[str | None, str | None]:
    from gitswarm.problems.frontmatter import FrontMatterError, split

    text = memory.read_file(f"problems/{problem}/SOLUTION.md")
    if not text:
        return None, None
    try:
        values = split(text.decode("utf-8", "replace")).values
    except FrontMatterError:
        return None, None
    return values.get("candidate"), values.get("path")


def _grade(memory, problem: str, candidate: str | None) -> str:
    """The newest grade of the selected candidate (else of any candidate), as a short cell."""
    from gitswarm.referee.grades import GradeStore, describe

    store = GradeStore(memory)
    found = store.for_candidate(problem, candidate) if candidate else []
    found = found or store.for_problem(problem)
    return describe(max(found, key=lambda g: g.time)) if found else "-"
