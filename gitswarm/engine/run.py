"""`solve()`: open or create the run, resume its state, run the swarm, select solutions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from gitswarm.core.control import Control
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
from gitswarm.engine.merger import Merger
from gitswarm.engine.references import References
from gitswarm.engine.rngstate import restore_rng
from gitswarm.engine.runlock import clear_stale_locks, run_lock
from gitswarm.engine.setaside import Streaks
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


def caps_check(cfg: SolveConfig, ledger: Ledger, view: RunView,
               elsewhere: Callable[[], tuple[int, float]] | None = None):
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


async def solve(cfg: SolveConfig, problem_set: ProblemSet, model: Model, merger_model: Model,
                listeners: list[Listener] | None = None, control: Control | None = None) -> RunResult:
    """Run the swarm on `problem_set` until a stop condition; resumable at any instant."""
    git = GitThread()
    memory = await git(open_run, cfg, problem_set)
    with run_lock(cfg.run):
        removed = await git(clear_stale_locks, cfg.run)
        return await _solve(cfg, problem_set, model, merger_model, listeners, control, git, memory, removed)


async def load_state(cfg: SolveConfig, memory: Memory, git: GitThread,
                     problems: list[str]) -> tuple[Ledger, MemoryIndex, RunView]:
    """The ledger, the index brought up to main and the run's view, as a run starts or
    resumes; the ledger records the selection rule the run uses, for `status`."""
    ledger = await git(Ledger.load, memory)
    index = MemoryIndex()
    await git(index.update, memory.repo, memory.main())
    view = RunView(cfg, problems)
    view.settle(selection.settled(index, problems, selection.Rule.of(cfg)))
    ledger.selection = selection.Rule.of(cfg).as_record()
    return ledger, index, view


async def _solve(cfg, problem_set, model, merger_model, listeners, control, git, memory, removed) -> RunResult:
    problems = [p for p in memory.problems() if not cfg.problem_ids or p in cfg.problem_ids]
    ledger, index, view = await load_state(cfg, memory, git, problems)
    events = EventLog(cfg.run, listeners)
    sandbox = anyio.CapacityLimiter(2)
    references = References(problem_set, sandbox)  # removed when the run ends (finally, below)
    shared = Shared(memory, git, index, view, model, events, sandbox, caps_check(cfg, ledger, view),
                    ledger, references)
    control = control or Control()
    merger = Merger(shared, ledger, merger_model)
    streaks = Streaks.from_records(cfg.no_progress, ledger.episodes.values())
    scheduler = Scheduler(shared, ledger, merger, problem_set, problems, control,
                          restore_rng(cfg.seed, ledger.rng_state), streaks,
                          free_workers=[f"w{i:02d}" for i in range(1, cfg.workers + 1)])
    events.emit("run_started", run=memory.run_id, model=cfg.model, budget=cfg.budget,
                workers=cfg.workers, charged=ledger.charged, problems=problems,
                episodes=ledger.totals.episodes, max_episodes=cfg.max_episodes,
                interrupted=len(ledger.running()),
                set_aside=sorted(streaks.set_aside & set(problems)),
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
        for problem, picked in chosen.items():
            events.emit("selected", problem=problem, path=picked.path if picked else None,
                        nominations=picked.nominations if picked else 0,
                        verified=picked.verified if picked else None)
        cost, known = ledger.cost
        result = RunResult(stop, ledger.charged, ledger.totals.episodes, ledger.tokens, cost, known, chosen)
        events.emit("run_stopped", **stop.as_event(), charged=result.charged, episodes=result.episodes,
                    tokens=result.tokens)
        return result
    finally:
        events.close()
        references.close()
