"""What one run of an experiment says: whether it finished (its event log), and its figures,
read through the same read model `gitswarm status` uses (so the numbers agree), the ledger's
records and the run report's compounding figures. Read-only."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gitswarm.core.event_types import RunStarted, RunStopped
from gitswarm.core.events import Event
from gitswarm.core.stops import StopReason
from gitswarm.engine.events import read_events

PENDING, INTERRUPTED, FINISHED = "pending", "interrupted", "finished"
"""A run's states: no repository yet; started but cut (by Ctrl-C or a kill), resumed by the
engine when run again; ended by a stop other than the user's."""
OUTCOMES = ("contribute", "nominate", "abstain", "failed", "stopped", "running")
"""The ledger's episode statuses, in the order the report shows them (a failed episode is
split by the class of its failure where the ledger records one)."""
SOLVED = 1.0 - 1e-9
"""A problem is solved when its selected solution has full marks (score / max)."""
BROKEN = frozenset({StopReason.PROVIDER_FAILING, StopReason.MODEL_FATAL, StopReason.ENGINE_ERRORS})
"""Stops that say the run measured the provider or gitswarm, not the arm: the experiment says
so and exits 1. A run that made no progress is a result of its arm, not one of these."""


@dataclass(frozen=True)
class RunStatus:
    """Where a run stands, from its event log."""

    state: str
    reason: str | None = None
    """The last `run_stopped` reason (a `StopReason` value), when it stopped."""
    detail: str = ""
    wall_seconds: float = 0.0
    """Time spent running: from each start of the run to its stop (or its last event, when cut)."""

    @property
    def finished(self) -> bool:
        return self.state == FINISHED


def run_status(run: Path) -> RunStatus:
    """A run is finished when the last start in its event log was followed by `run_stopped`
    with a reason that is not the user's; a run cut before that is resumed by the engine."""
    events = read_events(run) if (run / "HEAD").exists() or (run / ".git").exists() else []
    if not events:
        return RunStatus(PENDING)
    wall: float = 0.0
    started: Event | None = None
    last: Event | None = None
    for event in events:
        if isinstance(event, RunStarted):
            wall += (last.time - started.time) if started and last else 0.0
            started, last = event, event
        elif started is not None:
            last = event
    wall += (last.time - started.time) if started and last else 0.0
    if not isinstance(last, RunStopped) or last.reason == StopReason.USER.value:
        return RunStatus(INTERRUPTED, last.reason if isinstance(last, RunStopped) else None, "", round(wall, 3))
    return RunStatus(FINISHED, last.reason, last.detail, round(wall, 3))


@dataclass(frozen=True)
class RunFigures:
    """One run's figures, as the experiment's report shows them."""

    arm: str
    seed: int
    path: str
    state: str
    reason: str | None
    detail: str
    episodes: int
    """Worker episodes of any outcome: `status --json`'s totals.episodes."""
    tokens: int
    """Every call's tokens, the merger's and failed ones too: `status --json`'s totals.tokens."""
    cost_usd: float | None
    """`status --json`'s totals.cost_usd: None when some call had no price."""
    wall_seconds: float
    scores: dict[str, float | None]
    """Per problem: the selected solution's grade as score / max; 0.0 when nothing was
    selected; None when the selected solution is not graded (a proof without a referee)."""
    outcomes: dict[str, int] = field(default_factory=dict)
    """Episodes by ledger status; failed ones as `failed (provider)`, ... where the class is known."""
    contributions: int = 0
    built_on: int = 0
    """Contributions a later one of the same problem built on (the run report's figure)."""
    in_ancestry: int = 0
    """Contributions in the ancestry of a selected solution."""
    largest_episode_tokens: int = 0
    selector: dict = field(default_factory=dict)
    """The selection and the reviews against the referee (`report.selector.SelectorQuality`)."""
    citing: int = 0
    """Contributions that cite another of the same problem (the citation rate's part)."""

    @property
    def solved(self) -> int:
        return sum(s is not None and s >= SOLVED for s in self.scores.values())

    @property
    def graded(self) -> int:
        return sum(s is not None for s in self.scores.values())

    def as_dict(self) -> dict:
        return asdict(self) | {"solved": self.solved, "graded": self.graded}


def read_figures(arm: str, seed: int, run: Path) -> RunFigures:
    """The figures of the run at `run` (zeros for a run not started)."""
    status = run_status(run)
    if status.state == PENDING:
        return RunFigures(arm, seed, str(run), status.state, None, "", 0, 0, 0.0, 0.0, {})
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory
    from gitswarm.readmodel.read import read_run
    from gitswarm.report.collect import collect

    memory = Memory(run)
    state = read_run(memory)
    records = [r for key, r in Ledger.load(memory).episodes.items() if key != "merger"]
    report, _ = collect(run)
    totals = state.totals
    return RunFigures(
        arm, seed, str(run), status.state, status.reason, status.detail, totals.episodes, totals.tokens,
        totals.cost_usd, status.wall_seconds, scores(state), outcomes(records), report.contributions,
        sum(p.built_on for p in report.problems), sum(p.in_ancestry for p in report.problems),
        max((r.tokens_in + r.tokens_out for r in records), default=0), report.selector,
        sum(p.citing for p in report.problems))


def scores(state) -> dict[str, float | None]:
    """Each problem's score from the read model: its selected solution's grade, normalised."""
    found: dict[str, float | None] = {}
    for problem in state.problems:
        grade = problem.grade if problem.selected else None
        if not problem.selected:
            found[problem.id] = 0.0
        elif grade is None or grade.score is None:
            found[problem.id] = None
        else:
            found[problem.id] = grade.score / grade.max if grade.max else 0.0
    return found


def outcomes(records) -> dict[str, int]:
    """Episodes by outcome, in `OUTCOMES` order; failed ones split by class where known."""
    counted = Counter(f"failed ({r.failure})" if r.status == "failed" and getattr(r, "failure", "")
                      else r.status for r in records)
    order = {name: i for i, name in enumerate(OUTCOMES)}
    return dict(sorted(counted.items(), key=lambda kv: (order.get(kv[0].split(" ")[0], len(order)), kv[0])))
