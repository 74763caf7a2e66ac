"""`RunContext`: a run's records and what its episodes share, built in one place.

Three kinds of process run a run: a local `solve`, the coordinator of a run on a git remote
(`remote/solve.py`) and a remote worker (`remote/worker.py`). Each loads the same records
from its run repository (the ledger, the index brought up to main, the run's view, the
no-progress streaks), opens the event log, builds the `Shared` its episodes use, and says
`run_started` and `run_stopped`. They did each by hand, and drifted: the coordinator gave its
episodes' `Shared` the merger's model. Here it is done once; each caller adds only what is its
own (its streaks, the spending of other processes, its references, its event fields).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio

from gitswarm.core.events import Listener
from gitswarm.core.stops import CapReached, Stop, StopReason
from gitswarm.engine import selection
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import RunView
from gitswarm.engine.episode import Model, Shared
from gitswarm.engine.events import EventLog
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.index import MemoryIndex
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.references import References
from gitswarm.engine.selection import Selected
from gitswarm.engine.setaside import Streaks
from gitswarm.memory.repo import Memory

Elsewhere = Callable[[], tuple[int, float]]
"""The tokens and USD the run's other processes spent (a run on a remote), for its caps."""


@dataclass
class RunContext:
    """One process's view of a run: its records, its event log and its episodes' `Shared`."""

    cfg: SolveConfig
    problems: list[str]
    """The problems this process works on."""
    shared: Shared
    streaks: Streaks

    @property
    def ledger(self) -> Ledger:
        return self.shared.ledger

    @property
    def events(self) -> EventLog:
        return self.shared.events

    @property
    def memory(self) -> Memory:
        return self.shared.memory

    @classmethod
    async def build(cls, cfg: SolveConfig, memory: Memory, git: GitThread, problems: list[str], model: Model,
                    listeners: list[Listener] | None, *, sandbox: anyio.CapacityLimiter | None = None,
                    references: References | None = None, elsewhere: Elsewhere | None = None,
                    streaks: Streaks | None = None) -> RunContext:
        """Load the run's records from `memory` (as a run starts or resumes) and open its event
        log; `streaks` defaults to the no-progress rule over the ledger's own episodes."""
        ledger, index, view = await load_state(cfg, memory, git, problems)
        events = EventLog(cfg.run, listeners)
        shared = Shared(memory, git, index, view, model, events, sandbox or anyio.CapacityLimiter(2),
                        caps_check(cfg, ledger, view, elsewhere), ledger, references)
        if streaks is None:
            streaks = Streaks.from_records(cfg.no_progress, ledger.episodes.values())
        return cls(cfg, problems, shared, streaks)

    def counting(self, elsewhere: Elsewhere) -> None:
        """Count in the caps what the run's other processes spent (`elsewhere`), for a process
        whose count of them is made from the ledger just loaded (a coordinator's)."""
        self.shared.check_caps = caps_check(self.cfg, self.ledger, self.shared.view, elsewhere)

    def started(self, **fields: object) -> None:
        """`run_started`, with what every process says of its run and its own `fields`."""
        ledger = self.ledger
        self.events.emit("run_started", **{
            "run": self.memory.run_id, "model": self.cfg.model, "budget": self.cfg.budget,
            "workers": self.cfg.workers, "charged": ledger.charged, "problems": self.problems,
            "episodes": ledger.totals.episodes, "max_episodes": self.cfg.max_episodes,
            "set_aside": sorted(self.streaks.set_aside & set(self.problems)), "stale_locks_removed": [],
            **fields})

    def selected(self, chosen: dict[str, Selected | None]) -> None:
        """A `selected` event per problem: the solution selection wrote, or none."""
        for problem, picked in chosen.items():
            self.events.emit("selected", problem=problem, path=picked.path if picked else None,
                             nominations=picked.nominations if picked else 0,
                             verified=picked.verified if picked else None)

    def stopped(self, stop: Stop, **fields: object) -> None:
        """`run_stopped`: why, and what this process's ledger counts."""
        ledger = self.ledger
        self.events.emit("run_stopped", **stop.as_event(), charged=ledger.charged, episodes=ledger.totals.episodes,
                         tokens=ledger.tokens, **fields)

    def close(self) -> None:
        self.events.close()
        if self.shared.references is not None:
            self.shared.references.close()


def caps_check(cfg: SolveConfig, ledger: Ledger, view: RunView, elsewhere: Elsewhere | None = None):
    """The check made before every model call: CapReached once the ledger's totals, which
    hold every call charged so far (failed ones too), reach the token or USD cap. In a run
    on a remote, `elsewhere` gives the tokens and USD the rest of the run spent meanwhile."""
    def check() -> None:
        more_tokens, more_usd = elsewhere() if elsewhere is not None else (0, 0.0)
        cost, known = ledger.cost
        view.spent(ledger.tokens + more_tokens, cost + more_usd, known)
        if cfg.max_total_tokens is not None and view.tokens >= cfg.max_total_tokens:
            raise CapReached(Stop(StopReason.TOKEN_CAP, f"token cap of {cfg.max_total_tokens} reached"))
        if cfg.max_usd is not None and view.cost >= cfg.max_usd:
            raise CapReached(Stop(StopReason.USD_CAP, f"USD cap of {cfg.max_usd:.2f} reached"))
    return check


async def load_state(cfg: SolveConfig, memory: Memory, git: GitThread,
                     problems: list[str]) -> tuple[Ledger, MemoryIndex, RunView]:
    """The ledger, the index brought up to main and the run's view, as a run starts or
    resumes; the ledger records the selection rule the run uses, for `status`."""
    ledger = await git(Ledger.load, memory)
    index = MemoryIndex()
    await git(index.update, memory.repo, memory.main())
    view = RunView(cfg, problems)
    rule = selection.Rule.of(cfg)
    view.settle(selection.settled(index, problems, rule))
    ledger.selection = rule.as_record()
    return ledger, index, view
