"""The run kernel: one process's part of a run, from its lock to its close, in one place.

Three kinds of process run a run: a local `solve` (`engine/run.py`), the coordinator of a run
on a git remote (`remote/solve.py`) and a remote worker (`remote/worker.py`). Each is a
configuration of `Run`: `Run.opened` opens the run's store (its memory and git thread), takes the run
lock, clears the ref locks a crash left, and closes the event log and the references in every
path; `Run.build` loads the same records from the run repository (the ledger, the index
brought up to main, the run's view, the no-progress streaks) and builds the `Shared` its
episodes use (`RunContext`); `Run.drive` runs what decides the run's stop (`Driver`: a
scheduler over its `EpisodeSource`, the local run's own episodes or a worker's claims; or a
coordinator's intake of the episodes workers push) beside the merger, where the process has
one; `select_all` writes each problem's solution; `Run.end` says `run_stopped`. Each process
adds only what is its own: its source or intake, its streaks, the spending of other
processes, its references, what it says in `run_started`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from gitswarm.core import event_types as ev
from gitswarm.core.events import Listener
from gitswarm.core.stops import Stop
from gitswarm.domain import selection
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.domain.selection import Selection
from gitswarm.engine import collector, stoprule
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.events import EventLog
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.merger import Merger
from gitswarm.engine.references import References
from gitswarm.engine.runlock import clear_stale_locks, run_lock
from gitswarm.engine.runview import RunView
from gitswarm.engine.selection import select
from gitswarm.engine.setaside import Streaks
from gitswarm.engine.shared import Model, Shared
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import WRITER_FROM, Store
from gitswarm.sandbox import containment as sandbox_containment
from gitswarm.sandbox import in_force as sandbox_in_force

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
    async def build(cls, cfg: SolveConfig, store: Store, problems: list[str], model: Model,
                    listeners: list[Listener] | None, *, sandbox: anyio.CapacityLimiter | None = None,
                    references: References | None = None, elsewhere: Elsewhere | None = None,
                    streaks: Streaks | None = None, reviewer: Model | None = None) -> RunContext:
        """Load the run's records from `store` (as a run starts or resumes) and open its event
        log; `streaks` defaults to the no-progress rule over the ledger's own episodes."""
        ledger, index, view = await load_state(cfg, store, problems)
        await anyio.to_thread.run_sync(sandbox_containment)  # probed once a process, off the event loop
        events = EventLog(cfg.run, listeners)
        shared = Shared(store, index, view, cfg, model, events, sandbox or anyio.CapacityLimiter(2),
                        caps_check(cfg, ledger, view, elsewhere), ledger, references, reviewer)
        if streaks is None:
            streaks = Streaks.from_records(cfg.no_progress, ledger.episodes.values())
        return cls(cfg, problems, shared, streaks)

    def counting(self, elsewhere: Elsewhere) -> None:
        """Count in the caps what the run's other processes spent (`elsewhere`), for a process
        whose count of them is made from the ledger just loaded (a coordinator's)."""
        self.shared.check_caps = caps_check(self.cfg, self.ledger, self.shared.view, elsewhere)

    def started(self, check_budget: bool = True, *, workers: int | None = None, interrupted: int | None = None,
                stale_locks_removed: Sequence[str] = (), worker: str | None = None, remote: str | None = None,
                own_spending: bool = True) -> None:
        """`run_started`, with what every process says of its run and its own: its slots
        (default the settings'), the episodes a crash cut off, the stale locks removed, a
        worker's name, the remote; then, where the budget left cannot let the rule select on
        every open problem, `budget_short` (not `check_budget`: a remote worker, whose ledger
        holds only its own spending; nor does it count the run's spending: not `own_spending`)."""
        ledger, counted = self.ledger, own_spending
        self.events.emit(ev.RunStarted(
            run=self.memory.run_id, model=self.cfg.model, budget=self.cfg.budget,
            reviewer_model=self.cfg.reviewer_model, reviews=self.cfg.reviews, isolation=self.cfg.isolation,
            workers=self.cfg.workers if workers is None else workers, charged=ledger.charged if counted else 0,
            problems=self.problems, episodes=ledger.totals.episodes if counted else 0,
            max_episodes=self.cfg.max_episodes, set_aside=sorted(self.streaks.set_aside & set(self.problems)),
            stale_locks_removed=list(stale_locks_removed), sandbox=sandbox_in_force(), interrupted=interrupted,
            worker=worker, remote=remote))
        self.events.flush()  # the start's settings, which `resume` compares, in the log at once
        rule, view = Rule.of(self.cfg), self.shared.view
        waiting = [p for p in self.problems if p not in view.settled]
        left = max(0, self.cfg.budget - ledger.charged)
        needed = rule.budget_short(left, len(waiting))
        if check_budget and needed is not None:  # said at the start, so the user can give more before any is spent
            self.events.emit(ev.BudgetShort(budget=self.cfg.budget, left=left, problems=len(waiting),
                                            per_problem=rule.episodes_to_select, verify=rule.verify,
                                            suggested=ledger.charged + needed))

    def selected(self, chosen: dict[str, Selection | None]) -> None:
        """A `selected` event per problem: the solution selection wrote, or none."""
        for problem, picked in chosen.items():
            self.events.emit(ev.Selected(problem=problem, path=picked.path if picked else None,
                                         nominations=(picked.nominations or 0) if picked else 0,
                                         verified=picked.verified if picked else None,
                                         rejected=True if picked and picked.rejected else None))

    def stopped(self, stop: Stop, worker: str | None = None) -> None:
        """`run_stopped`: why, and what this process's ledger counts (a remote worker names itself)."""
        ledger = self.ledger
        self.events.emit(ev.RunStopped(reason=stop.reason.value, detail=stop.detail, charged=ledger.charged,
                                       episodes=ledger.totals.episodes, tokens=ledger.tokens, worker=worker))


def caps_check(cfg: SolveConfig, ledger: Ledger, view: RunView,
               elsewhere: Elsewhere | None = None) -> Callable[[], Stop | None]:
    """The check made before every model call: the stop a cap calls for once the ledger's
    totals, which hold every call charged so far (failed ones too), reach the token or USD cap;
    None while the call may be made. In a run on a remote, `elsewhere` gives the tokens and
    USD the rest of the run spent meanwhile."""
    def check() -> Stop | None:
        more_tokens, more_usd = elsewhere() if elsewhere is not None else (0, 0.0)
        cost, known = ledger.cost
        view.spent(ledger.tokens + more_tokens, cost + more_usd, known)
        return stoprule.capped(view.tokens, view.cost, cfg.max_total_tokens, cfg.max_usd)
    return check


async def load_state(cfg: SolveConfig, store: Store, problems: list[str]) -> tuple[Ledger, MemoryIndex, RunView]:
    """The ledger, the index brought up to main and the run's view, as a run starts or
    resumes; the ledger records the selection rule the run uses, for `status`."""
    ledger = await store.run(Ledger.load, store.memory)
    index = await store.kept_index(await store.main())
    view = RunView(problems)
    rule = Rule.of(cfg)
    view.settle(*selection.standing_of(index, problems, rule))
    record = rule.as_record()
    if ledger.selection and ledger.selection != record:  # a resume that changed the rule (`solve --change-rule`)
        ledger.selection = record
        ledger.restate()  # into the next flush, so that every view judges by the rule selection used
    ledger.selection = record
    return ledger, index, view


@dataclass
class RunResult:
    """How a run ended and what it selected."""

    reason: Stop
    charged: int
    episodes: int
    tokens: int
    cost: float
    cost_known: bool
    selected: dict[str, Selection | None] = field(default_factory=dict)

    @classmethod
    def of(cls, stop: Stop, ledger: Ledger, selected: dict[str, Selection | None]) -> RunResult:
        """The result of a run that stopped on `stop`, as its ledger counts it."""
        cost, known = ledger.cost
        return cls(stop, ledger.charged, ledger.totals.episodes, ledger.tokens, cost, known, selected)


def _select(memory: Memory, index: MemoryIndex, problem: str, rule: Rule,
            by_answers: bool = False) -> Selection | None:
    """Select with the referee's scores as the tie-break (they never reach the agents); with
    `by_answers` (a run of independent episodes, which nominate nothing), by the majority of
    the attempts' final answers: a problem whose attempts state none (a proof) gets none."""
    from gitswarm.referee.grades import GradeStore

    if by_answers:
        from gitswarm.engine.majority import select_by_answers

        return select_by_answers(memory, index, problem)
    return select(memory, index, problem, rule, GradeStore(memory).scores(problem))


async def select_all(shared: Shared, problems: Iterable[str]) -> dict[str, Selection | None]:
    """Each problem's solution, as every process that selects selects it (`_select`), written
    as its `SOLUTION.md` on main; None where there is none."""
    rule, by_answers = Rule.of(shared.settings), shared.modes.by_answers
    return {p: await shared.store.run(_select, shared.memory, shared.index, p, rule, by_answers) for p in problems}


Driver = Callable[[], Awaitable[Stop]]
"""What runs a run until its stop and returns it: a `Scheduler`'s loop over its `EpisodeSource`
(a local run's own episodes, a worker's claims), or a coordinator's intake of the episodes its
workers push (`remote.coordinator.Coordinator.run`); each decides by `stoprule.decide`."""


@dataclass
class Run:
    """One process's part of a run, under the run lock (`opened`): its store (memory and git thread),
    then its `RunContext` (`build`), driven to its stop (`drive`) and ended (`end`)."""

    cfg: SolveConfig
    store: Store
    stale_locks: list[str]
    """The ref locks a dead process left, removed as the run opened (relative to its folder)."""
    references: References | None = None
    built: RunContext | None = None

    @classmethod
    @asynccontextmanager
    async def opened(cls, cfg: SolveConfig, opener: Callable[[], Memory],
                     references: References | None = None) -> AsyncIterator[Run]:
        """The run in `cfg.run`, its store's memory opened by `opener` on a new git thread, under the run
        lock and with the stale ref locks cleared; on the way out, exceptions included, its event
        log and its `references` (the run's from here on) are closed."""
        store: Store | None = None
        try:
            store = await Store.open(opener, writer=cfg.workers >= WRITER_FROM)
            with run_lock(cfg.run):
                removed = await store.run(clear_stale_locks, cfg.run)
                run = cls(cfg, store, [str(p.relative_to(cfg.run)) for p in removed], references)
                try:
                    yield run
                finally:
                    if run.built is not None:
                        run.built.events.close()
        finally:
            if store is not None:
                with anyio.CancelScope(shield=True):
                    await store.close()
            if references is not None:
                references.close()

    @property
    def memory(self) -> Memory:
        """The store's memory, for work on the git thread (`store.run`)."""
        return self.store.memory

    @property
    def context(self) -> RunContext:
        if self.built is None:
            raise RuntimeError("the run's context is not built yet (Run.build)")
        return self.built

    def chosen(self) -> list[str]:
        """The run's problems this process works on: `cfg.problem_ids` where given, else all."""
        return [p for p in self.memory.problems() if not self.cfg.problem_ids or p in self.cfg.problem_ids]

    async def build(self, problems: list[str], model: Model, listeners: list[Listener] | None, *,
                    sandbox: anyio.CapacityLimiter | None = None, elsewhere: Elsewhere | None = None,
                    streaks: Streaks | None = None, reviewer: Model | None = None) -> RunContext:
        """The run's records loaded and its event log opened (`RunContext.build`), with its references."""
        self.built = await RunContext.build(self.cfg, self.store, problems, model, listeners,
                                            sandbox=sandbox, references=self.references, elsewhere=elsewhere,
                                            streaks=streaks, reviewer=reviewer)
        return self.built

    async def drive(self, driver: Driver, merger: Merger | None = None,
                    alongside: Sequence[Callable[[], Coroutine[Any, Any, object]]] = ()) -> Stop:
        """Run `driver` to the run's stop, with `merger` composing main meanwhile and the tasks
        `alongside`; then wait for the merger's last passes and those tasks, and flush the
        merger's last charges. What is alive as it starts is left out of the garbage collector's
        passes until it ends (`collector.frozen`)."""
        with collector.frozen():
            async with anyio.create_task_group() as tg:
                stop_merger = anyio.Event()
                if merger is not None:
                    tg.start_soon(merger.run, stop_merger)
                for task in alongside:
                    tg.start_soon(task)
                stop = await driver()
                stop_merger.set()
        if merger is not None:
            await self.context.ledger.written(self.store)
        return stop

    async def select(self) -> dict[str, Selection | None]:
        """Each of this process's problems' solution (`select_all`)."""
        return await select_all(self.context.shared, self.context.problems)

    def end(self, stop: Stop, chosen: dict[str, Selection | None] | None = None,
            worker: str | None = None) -> RunResult:
        """Say what was selected (`chosen`, by a process that selects) and why the run stopped
        (`run_stopped`, naming a remote `worker`); the run's result, as its ledger counts it."""
        if chosen is not None:
            self.context.selected(chosen)
        self.context.stopped(stop, worker)
        return RunResult.of(stop, self.context.ledger, chosen or {})
