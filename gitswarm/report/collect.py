"""Gather a run's report: per-problem results, cost, tokens, time, episodes, compounding.

Each problem's state, selection, nominations, counts and grade, and the run's totals, are the
read model's (`gitswarm.readmodel`), as `status` and the dashboard show them; the report adds
what needs the history and every ledger record: the compounding figures, every candidate's
review trail (`trail`), each problem's episodes, tokens, cost and worker time, and the run's
settings (`settings`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from gitswarm.core.events import EVENT_LOG, read_times, running_seconds
from gitswarm.domain.grade import Grade, statuses_line
from gitswarm.readmodel.model import ProblemState
from gitswarm.report.graph import Graph, compounding, load
from gitswarm.report.trail import trails

SCRIPTED = "by the demo's scripted judge, no real referee"
"""What a grade of the demo's scripted judge (`demo.judge.JUDGE_MODEL`) says of itself."""


@dataclass(frozen=True)
class ProblemReport:
    """One problem's result and figures."""

    id: str
    kind: str
    state: str
    """The read model's state (`readmodel.STATES`)."""
    selected: str | None
    """The selected candidate commit (from SOLUTION.md on main), or None."""
    selected_path: str | None
    nominations: dict[str, int]
    """Nominations per candidate commit, on main."""
    grade: str
    """The grade shown (the read model's rule, as `status` shows it), "-" when there is none."""
    grade_scripted: bool
    """That grade is the demo's scripted judge's (the Markdown and HTML say so beside it)."""
    graded_by: str
    """Its grader and model ("-" when there is none)."""
    verification: str
    """Of the candidate it stands on: verified, unverified, not required (K = 0) or "-"."""
    trail_of: str | None
    """The path of the candidate whose review trail `trail` is: the selected one, else the leading one."""
    trail: list[dict]
    """That candidate's reviews, oldest first (`ReviewEntry.as_dict()`)."""
    story: list[dict]
    """Every candidate in the history, oldest first: its reviews, what it revises and answers,
    where it ended (`trail.CandidateTrail.as_dict()`)."""
    counts: dict[str, int]
    """Item files per folder on main (`Counts.as_dict()`)."""
    candidates: list[dict]
    """Each candidate as the read model has it (`Candidate.as_dict()`)."""
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
    citing: int = 0
    """Contributions that cite another of the problem's (`report.graph`)."""
    citation_rate: float | None = None
    statuses: str | None = None
    """A reproduce grade's statuses and executable hash (`domain.grade.statuses_line`), else None."""


@dataclass(frozen=True)
class RunReport:
    """The whole report; `to_dict` is the JSON format."""

    run: str
    path: str
    episodes: int
    charged: int
    tokens: int
    """Every call's tokens, the merger's and failed calls' too: the ledger's total, as `status` has it."""
    problem_tokens: int
    """Of `tokens`, the problems' episodes' (the sum of the problems' `tokens`)."""
    merger_tokens: int
    """Of `tokens`, the merger's (summaries and conflict resolutions, charged to no problem)."""
    cost_usd: float | None
    """The ledger's total, as `status` has it; None when some call had no price."""
    wall_seconds: float
    """How long the run ran (`core.events.running_seconds`: each start to its stop, summed, as
    the dashboard's clock counts); without an event log, its first episode's start to its last
    episode's end."""
    settings: dict
    """What the run ran with: model, budget, workers, verification rule (`settings.RunSettings`)."""
    contributions: int
    built_on_share: float | None
    ancestry_share: float | None
    citation_rate: float | None
    problems: list[ProblemReport] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    """The parts of every call's usage, the merger's and failed calls' too (the read model's
    totals, `Totals.parts()`)."""
    workers: list[dict] = field(default_factory=list)
    """In a run on a git remote, each worker process as the read model has it."""
    failed: dict[str, int] = field(default_factory=dict)
    """Failed episodes by class: provider, model, engine (the read model's totals)."""
    selector: dict = field(default_factory=dict)
    """The selection and the reviews against the referee's grades (`selector.SelectorQuality`)."""
    roles: list[dict] = field(default_factory=list)
    """What each role spent on its model (`spent_by_role`): the workers', the review episodes'
    (on the reviewer model, where the run had one) and the merger's."""
    inherited: dict = field(default_factory=dict)
    """What the run inherited from the run it began from (`solve --from`) and what its solutions
    built on of it (`inherited.Inherited`); empty for a run that began afresh."""

    def to_dict(self) -> dict:
        return asdict(self)


def collect(run: Path, shown: str | None = None) -> tuple[RunReport, Graph]:
    """Read the run (main, unmerged branches, ledger, grades) without writing to it; `shown`
    is where the report says it was read from (default the folder)."""
    from gitswarm.domain.index import MemoryIndex
    from gitswarm.memory import ledgerbook
    from gitswarm.memory.repo import Memory
    from gitswarm.readmodel.read import read_run
    from gitswarm.report.inherited import inherited
    from gitswarm.report.selector import selector_quality
    from gitswarm.report.settings import read_settings

    memory = Memory(run)
    index = MemoryIndex()
    state = read_run(memory, index)
    graph = load(memory.snapshot())
    origin = inherited(memory.meta, index, graph, state)
    every = ledgerbook.episodes(memory)
    records = [r for key, r in every.items() if key != "merger"]
    merger = every.get("merger")
    problems = [_problem(graph, p, [r for r in records if r.problem == p.id]) for p in state.problems]
    started = [r.started for r in records]
    ended = [r.ended for r in records if r.ended]
    total = sum(p.contributions for p in problems)
    settings = read_settings(memory, run)
    totals = state.totals
    return RunReport(
        run=memory.run_id, path=shown or str(run), episodes=totals.episodes, charged=totals.charged,
        tokens=totals.tokens, problem_tokens=sum(p.tokens for p in problems),
        merger_tokens=merger.tokens_in + merger.tokens_out if merger else 0,
        cost_usd=None if totals.cost_usd is None else round(totals.cost_usd, 6),
        wall_seconds=round(running_seconds(read_times(run / EVENT_LOG))
                           or (max(ended) - min(started) if started and ended else 0.0), 3),
        settings=settings.as_dict(),
        contributions=total,
        built_on_share=_share(sum(p.built_on for p in problems), total),
        ancestry_share=_share(sum(p.in_ancestry for p in problems), total),
        citation_rate=_share(sum(p.citing for p in problems), total),
        problems=problems, usage=state.totals.parts(), workers=[w.as_dict() for w in state.workers],
        failed=dict(state.totals.failed),
        selector=selector_quality(list(state.problems), settings.reviewer or settings.model or "the run's model")
        .as_dict(), roles=spent_by_role(every, settings.model),
        inherited=origin.as_dict() if origin is not None else {}), graph


def spent_by_role(every: dict, model: str | None) -> list[dict]:
    """The ledger's records summed by role and model: `workers` (every episode but an assigned
    review), `reviews` (the episodes the scheduler assigned a candidate to, on the reviewer
    model where the run had one) and `merger`; a record from before records named their model
    is the run's `model`'s."""
    found: dict[tuple[str, str], dict] = {}
    for key, record in every.items():
        role = "merger" if key == "merger" else "reviews" if record.reviews else "workers"
        name = record.model or (model if role != "merger" else None) or "not recorded"
        row = found.setdefault((role, name), {"role": role, "model": name, "episodes": 0, "calls": 0,
                                              "tokens": 0, "cost_usd": 0.0})
        row["episodes"] += key != "merger"
        row["calls"] += record.calls
        row["tokens"] += record.tokens_in + record.tokens_out
        known = row["cost_usd"] is not None and record.cost_known
        row["cost_usd"] = round(row["cost_usd"] + record.cost_usd, 6) if known else None
    order = {"workers": 0, "reviews": 1, "merger": 2}
    return sorted(found.values(), key=lambda r: (order[r["role"]], r["model"]))


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _problem(graph: Graph, problem: ProblemState, records) -> ProblemReport:
    from gitswarm.core.status import CHARGED

    candidate = problem.selected.candidate if problem.selected else None
    standing = problem.standing
    figures = compounding(graph, problem.id, candidate)
    known = all(r.cost_known for r in records)
    return ProblemReport(
        id=problem.id, kind=problem.kind, state=problem.state, selected=candidate,
        selected_path=problem.selected_path, nominations=problem.nominations, grade=problem.grade_text,
        grade_scripted=is_scripted(problem.grade), graded_by=graded_by(problem.grade),
        verification=problem.verification,
        trail_of=standing.path if standing else None,
        trail=[r.as_dict() for r in standing.trail] if standing else [],
        story=[t.as_dict() for t in trails(graph, problem, is_scripted)], counts=problem.counts.as_dict(),
        candidates=[c.as_dict() for c in problem.candidates],
        episodes=len(records), charged=sum(r.status in CHARGED for r in records),
        tokens=sum(r.tokens_in + r.tokens_out for r in records),
        cost_usd=round(sum(r.cost_usd for r in records), 6) if known else None,
        seconds=round(sum((r.ended or r.started) - r.started for r in records), 3),
        contributions=figures.contributions, built_on=figures.built_on, in_ancestry=figures.in_ancestry,
        built_on_share=_share(figures.built_on, figures.contributions),
        ancestry_share=_share(figures.in_ancestry, figures.contributions), citing=figures.citing,
        citation_rate=_share(figures.citing, figures.contributions), statuses=statuses_line(problem.grade))


def is_scripted(grade: Grade | None) -> bool:
    """Given by the demo's scripted judge, which knows only the demo script's texts."""
    from gitswarm.demo.judge import JUDGE_MODEL

    return grade is not None and grade.model == JUDGE_MODEL


def grade_cell(text: str, scripted: bool) -> str:
    """A grade as the Markdown and HTML show it: a scripted judge's says so."""
    return f"{text}, {SCRIPTED}" if scripted else text


def graded_by(grade: Grade | None) -> str:
    """Who gave a grade: its grader and the model that judged ("-" without a grade)."""
    if grade is None:
        return "-"
    return grade.grader + (f", model {grade.model}" if grade.model else "")
