"""A run: `RunContext`, its records and what its episodes share, built in one place; and
`solve()`, a local run: open or create the run, resume its state, run the swarm with its
own episodes (`LocalSource`), select.

Three kinds of process run a run: a local `solve`, the coordinator of a run on a git remote
(`remote/solve.py`) and a remote worker (`remote/worker.py`). Each loads the same records from
its run repository (the ledger, the index brought up to main, the run's view, the no-progress
streaks), opens the event log, builds the `Shared` its episodes use, and says `run_started`
and `run_stopped`, through `RunContext`; each adds only what is its own (its streaks, the
spending of other processes, its references, its event fields).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from gitswarm.core import event_types as ev
from gitswarm.core.control import Control
from gitswarm.core.events import Listener
from gitswarm.core.stops import Stop, StopReason
from gitswarm.engine import selection
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import RunView
from gitswarm.engine.events import EventLog
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.index import MemoryIndex
from gitswarm.engine.ledger import EpisodeRecord, Ledger
from gitswarm.engine.merger import Merger
from gitswarm.engine.references import References
from gitswarm.engine.rngstate import restore_rng
from gitswarm.engine.runlock import clear_stale_locks, run_lock
from gitswarm.engine.selection import Selected
from gitswarm.engine.setaside import Streaks
from gitswarm.engine.shared import Model, Shared
from gitswarm.engine.swarm import Scheduler
from gitswarm.memory.errors import NotARun
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import ProblemSet
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
    async def build(cls, cfg: SolveConfig, memory: Memory, git: GitThread, problems: list[str], model: Model,
                    listeners: list[Listener] | None, *, sandbox: anyio.CapacityLimiter | None = None,
                    references: References | None = None, elsewhere: Elsewhere | None = None,
                    streaks: Streaks | None = None, reviewer: Model | None = None) -> RunContext:
        """Load the run's records from `memory` (as a run starts or resumes) and open its event
        log; `streaks` defaults to the no-progress rule over the ledger's own episodes."""
        ledger, index, view = await load_state(cfg, memory, git, problems)
        await anyio.to_thread.run_sync(sandbox_containment)  # probed once a process, off the event loop
        events = EventLog(cfg.run, listeners)
        shared = Shared(memory, git, index, view, model, events, sandbox or anyio.CapacityLimiter(2),
                        caps_check(cfg, ledger, view, elsewhere), ledger, references, reviewer)
        if streaks is None:
            streaks = Streaks.from_records(cfg.no_progress, ledger.episodes.values())
        return cls(cfg, problems, shared, streaks)

    def counting(self, elsewhere: Elsewhere) -> None:
        """Count in the caps what the run's other processes spent (`elsewhere`), for a process
        whose count of them is made from the ledger just loaded (a coordinator's)."""
        self.shared.check_caps = caps_check(self.cfg, self.ledger, self.shared.view, elsewhere)

    def started(self, check_budget: bool = True, **fields: object) -> None:
        """`run_started`, with what every process says of its run and its own `fields`; then,
        where the budget left cannot let the rule select on every open problem, `budget_short`
        (not `check_budget`: a remote worker, whose ledger holds only its own spending)."""
        ledger = self.ledger
        self.events.emit(ev.RunStarted(**{
            "run": self.memory.run_id, "model": self.cfg.model, "budget": self.cfg.budget,
            "reviewer_model": self.cfg.reviewer_model, "reviews": self.cfg.reviews, "isolation": self.cfg.isolation,
            "workers": self.cfg.workers, "charged": ledger.charged, "problems": self.problems,
            "episodes": ledger.totals.episodes, "max_episodes": self.cfg.max_episodes,
            "set_aside": sorted(self.streaks.set_aside & set(self.problems)), "stale_locks_removed": [],
            "sandbox": sandbox_in_force(), **fields}))
        rule, view = selection.Rule.of(self.cfg), self.shared.view
        waiting = [p for p in self.problems if p not in view.settled]
        left = max(0, self.cfg.budget - ledger.charged)
        needed = rule.budget_short(left, len(waiting))
        if check_budget and needed is not None:  # said at the start, so the user can give more before any is spent
            self.events.emit(ev.BudgetShort(budget=self.cfg.budget, left=left, problems=len(waiting),
                                            per_problem=rule.episodes_to_select, verify=rule.verify,
                                            suggested=ledger.charged + needed))

    def selected(self, chosen: dict[str, Selected | None]) -> None:
        """A `selected` event per problem: the solution selection wrote, or none."""
        for problem, picked in chosen.items():
            self.events.emit(ev.Selected(problem=problem, path=picked.path if picked else None,
                                         nominations=picked.nominations if picked else 0,
                                         verified=picked.verified if picked else None))

    def stopped(self, stop: Stop, **fields: object) -> None:
        """`run_stopped`: why, and what this process's ledger counts."""
        ledger = self.ledger
        self.events.emit(ev.RunStopped(**stop.as_event(), charged=ledger.charged, episodes=ledger.totals.episodes,
                                       tokens=ledger.tokens, **fields))

    def close(self) -> None:
        self.events.close()
        if self.shared.references is not None:
            self.shared.references.close()


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
        if cfg.max_total_tokens is not None and view.tokens >= cfg.max_total_tokens:
            return Stop(StopReason.TOKEN_CAP, f"token cap of {cfg.max_total_tokens} reached")
        if cfg.max_usd is not None and view.cost >= cfg.max_usd:
            return Stop(StopReason.USD_CAP, f"USD cap of {cfg.max_usd:.2f} reached")
        return None
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
    view.settle(*selection.standing_of(index, problems, rule))
    ledger.selection = rule.as_record()
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
    selected: dict[str, selection.Selected | None] = field(default_factory=dict)

    @classmethod
    def of(cls, stop: Stop, ledger: Ledger, selected: dict[str, selection.Selected | None]) -> RunResult:
        """The result of a run that stopped on `stop`, as its ledger counts it."""
        cost, known = ledger.cost
        return cls(stop, ledger.charged, ledger.totals.episodes, ledger.tokens, cost, known, selected)


@dataclass
class LocalSource:
    """The episodes of a local run, the scheduler's own: ids from the ledger's numbering, one
    start at a time, the run's budget and episode cap checked against its ledger, every stop of
    the scheduler's own its run's stop, the episodes a crash cut off finished or started again
    as the run resumes, and the merger told of each commit."""

    shared: Shared
    ledger: Ledger
    merger: Merger
    batch: bool = False
    """One pick claimed at a time: each sees the one before it start."""

    async def refresh(self) -> Stop | None:
        return None  # nobody else decides when this run ends

    def stops_on(self, own: Stop) -> bool:
        return True

    def may_start(self, starting: int) -> bool:
        """The budget and the episode cap may not be passed by one more episode (those in
        flight or `starting` are counted already, or about to be)."""
        cfg = self.shared.view.config
        return self.ledger.charged + starting < cfg.budget and self.ledger.totals.episodes < cfg.max_episodes

    async def claim(self, picks: list[tuple[str, str]]) -> list[tuple[str, str] | None]:
        return [(self.ledger.new_id(), problem) for problem, _ in picks]

    async def resume(self, restart: Callable[[EpisodeRecord], Awaitable[bool]]) -> None:
        """Finish the records of the episodes a crash cut off: those whose commit was made
        are recorded as made; the others start again (`restart`, when their worker is free and
        their problem not settled) or are recorded as stopped."""
        memory, git = self.shared.memory, self.shared.git
        for record in self.ledger.running():
            done = await git(memory.op_commit, f"{record.episode}-final")
            if done is not None:
                info = await git(memory.commit, done)
                record.status = "nominate" if info.kind == "nomination" else "contribute"
                record.commit, record.ended = done, time.time()
                record.note = "finished before a crash; recorded on resume"
                await self.ledger.write(git, memory, record)
            elif not await restart(record):
                record.status, record.note = "stopped", "cut off by a crash, not restarted"
                record.ended = time.time()
                await self.ledger.write(git, memory, record)
        self.merger.kick()

    async def finished(self, record: EpisodeRecord) -> None:
        if record.commit:
            self.merger.kick(record.episode)

    def elsewhere(self) -> list[str]:
        return []


def open_run(cfg: SolveConfig, problem_set: ProblemSet) -> Memory:
    """The run repository: resumed when it exists, else created with the chosen problems."""
    if (cfg.run / "HEAD").exists() or (cfg.run / ".git").exists():
        memory = Memory(cfg.run)
        if memory.meta.get("set") != problem_set.name:
            raise NotARun(f"{cfg.run} is a run of the set {memory.meta.get('set')!r}, not "
                          f"{problem_set.name!r}; choose another --run folder")
        return memory
    ids = list(cfg.problem_ids) or None
    return Memory.create(cfg.run, problem_set, problem_ids=ids)


def _select(memory: Memory, index: MemoryIndex, problem: str, rule: selection.Rule,
            by_answers: bool = False) -> selection.Selected | None:
    """Select with the referee's scores as the tie-break (they never reach the agents); with
    `by_answers` (a run of independent episodes, which nominate nothing), by the majority of
    the attempts' final answers: a problem whose attempts state none (a proof) gets none."""
    from gitswarm.referee.grades import GradeStore

    if by_answers:
        from gitswarm.engine.majority import select_by_answers

        return select_by_answers(memory, index, problem)
    return selection.select(memory, index, problem, rule, GradeStore(memory).scores(problem))


async def solve(cfg: SolveConfig, problem_set: ProblemSet, model: Model, merger_model: Model,
                listeners: list[Listener] | None = None, control: Control | None = None,
                reviewer: Model | None = None) -> RunResult:
    """Run the swarm on `problem_set` until a stop condition; resumable at any instant. Review
    episodes run on `reviewer` where it is given (`SolveConfig.reviewer_model`)."""
    git = GitThread()
    memory = await git(open_run, cfg, problem_set)
    with run_lock(cfg.run):
        removed = await git(clear_stale_locks, cfg.run)
        return await _solve(cfg, problem_set, (model, merger_model, reviewer), listeners, control, git, memory,
                            removed)


async def _solve(cfg, problem_set, models, listeners, control, git, memory, removed) -> RunResult:
    model, merger_model, reviewer = models
    problems = [p for p in memory.problems() if not cfg.problem_ids or p in cfg.problem_ids]
    sandbox = anyio.CapacityLimiter(2)
    run = await RunContext.build(cfg, memory, git, problems, model, listeners, sandbox=sandbox,
                                 references=References(problem_set, sandbox), reviewer=reviewer)  # run.close() removes
    shared, ledger, index = run.shared, run.ledger, run.shared.index
    control = control or Control()
    merger = Merger(shared, ledger, merger_model)
    scheduler = Scheduler(shared, ledger, LocalSource(shared, ledger, merger), problem_set, problems, control,
                          restore_rng(cfg.seed, ledger.rng_state), run.streaks,
                          free_workers=[f"w{i:02d}" for i in range(1, cfg.workers + 1)])
    run.started(interrupted=len(ledger.running()),
                stale_locks_removed=[str(p.relative_to(cfg.run)) for p in removed])
    try:
        async with anyio.create_task_group() as tg:
            stop_merger = anyio.Event()
            tg.start_soon(merger.run, stop_merger)
            stop = await scheduler.loop()
            stop_merger.set()
        await git(ledger.flush, memory)  # the merger's last charges
        await git(memory.pack_refs)
        isolated = cfg.isolation == "independent"
        chosen = {p: await git(_select, memory, index, p, selection.Rule.of(cfg), isolated) for p in problems}
        run.selected(chosen)
        run.stopped(stop)
        return RunResult.of(stop, ledger, chosen)
    finally:
        run.close()
