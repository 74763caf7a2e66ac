"""`solve()`: open or create the run, resume its state, run the swarm, select solutions."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from gitswarm.core.control import Control
from gitswarm.core.events import Listener
from gitswarm.core.stops import Stop
from gitswarm.engine import selection
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.episode import Model
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.index import MemoryIndex
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.localsource import LocalSource
from gitswarm.engine.merger import Merger
from gitswarm.engine.references import References
from gitswarm.engine.rngstate import restore_rng
from gitswarm.engine.runcontext import RunContext
from gitswarm.engine.runlock import clear_stale_locks, run_lock
from gitswarm.engine.swarm import Scheduler
from gitswarm.memory.errors import NotARun
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import ProblemSet


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


def _select(memory: Memory, index: MemoryIndex, problem: str, verify: int,
            by_answers: bool = False) -> selection.Selected | None:
    """Select with the referee's scores as the tie-break (they never reach the agents); with
    `by_answers` (a run of independent episodes, which nominate nothing), by the majority of
    the attempts' final answers: a problem whose attempts state none (a proof) gets none."""
    from gitswarm.referee.grades import GradeStore

    if by_answers:
        from gitswarm.engine.majority import select_by_answers

        return select_by_answers(memory, index, problem)
    return selection.select(memory, index, problem, verify, GradeStore(memory).scores(problem))


async def solve(cfg: SolveConfig, problem_set: ProblemSet, model: Model, merger_model: Model,
                listeners: list[Listener] | None = None, control: Control | None = None) -> RunResult:
    """Run the swarm on `problem_set` until a stop condition; resumable at any instant."""
    git = GitThread()
    memory = await git(open_run, cfg, problem_set)
    with run_lock(cfg.run):
        removed = await git(clear_stale_locks, cfg.run)
        return await _solve(cfg, problem_set, model, merger_model, listeners, control, git, memory, removed)


async def _solve(cfg, problem_set, model, merger_model, listeners, control, git, memory, removed) -> RunResult:
    problems = [p for p in memory.problems() if not cfg.problem_ids or p in cfg.problem_ids]
    sandbox = anyio.CapacityLimiter(2)
    run = await RunContext.build(cfg, memory, git, problems, model, listeners, sandbox=sandbox,
                                 references=References(problem_set, sandbox))  # removed by run.close()
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
        chosen = {p: await git(_select, memory, index, p, cfg.verify, isolated) for p in problems}
        run.selected(chosen)
        run.stopped(stop)
        return RunResult.of(stop, ledger, chosen)
    finally:
        run.close()
