"""A local run, `solve()`: open or create the run, resume its state, run the swarm with its
own episodes (`LocalSource`) beside the merger, select. One configuration of the run kernel
(`engine/kernel.py`), which a coordinator and a remote worker configure too.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import anyio

from gitswarm.core.control import Control
from gitswarm.core.events import Listener
from gitswarm.core.status import Status
from gitswarm.core.stops import Stop
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.kernel import Run, RunResult
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.merger import Merger
from gitswarm.engine.references import References
from gitswarm.engine.rngstate import restore_rng
from gitswarm.engine.shared import Model, Shared
from gitswarm.engine.swarm import Scheduler
from gitswarm.memory import inherit
from gitswarm.memory.errors import NotARun
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import ProblemSet


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
        cfg = self.shared.settings
        return self.ledger.charged + starting < cfg.budget and self.ledger.totals.episodes < cfg.episode_cap

    async def claim(self, picks: list[tuple[str, str]]) -> list[tuple[str, str] | None]:
        return [(self.ledger.new_id(), problem) for problem, _ in picks]

    async def resume(self, restart: Callable[[EpisodeRecord], Awaitable[bool]]) -> None:
        """Finish the records of the episodes a crash cut off: those whose commit was made
        are recorded as made; the others start again (`restart`, when their worker is free and
        their problem not settled) or are recorded as stopped."""
        store = self.shared.store
        for record in self.ledger.running():
            done = await store.op_commit(f"{record.episode}-final")
            if done is not None:
                info = await store.commit(done)
                record.status = Status.NOMINATE if info.kind == "nomination" else Status.CONTRIBUTE
                record.commit, record.ended = done, time.time()
                record.note = "finished before a crash; recorded on resume"
                await self.ledger.write(store, record)
            elif not await restart(record):
                record.status, record.note = Status.STOPPED, "cut off by a crash, not restarted"
                record.ended = time.time()
                await self.ledger.write(store, record)
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
        if cfg.from_run is not None:
            inherit.check_resumed(memory.meta, cfg.run, cfg.from_run)
        return memory
    ids = list(cfg.problem_ids) or None
    source = inherit.origin(cfg.from_run, problem_set.name) if cfg.from_run is not None else None
    return Memory.create(cfg.run, problem_set, problem_ids=ids, origin=source)


async def solve(cfg: SolveConfig, problem_set: ProblemSet, model: Model, merger_model: Model,
                listeners: list[Listener] | None = None, control: Control | None = None,
                reviewer: Model | None = None) -> RunResult:
    """Run the swarm on `problem_set` until a stop condition; resumable at any instant. Review
    episodes run on `reviewer` where it is given (`SolveConfig.reviewer_model`)."""
    sandbox = anyio.CapacityLimiter(2)
    async with Run.opened(cfg, partial(open_run, cfg, problem_set), References(problem_set, sandbox)) as run:
        ctx = await run.build(run.chosen(), model, listeners, sandbox=sandbox, reviewer=reviewer)
        ledger, merger = ctx.ledger, Merger(ctx.shared, ctx.ledger, merger_model)
        scheduler = Scheduler(ctx.shared, ledger, LocalSource(ctx.shared, ledger, merger), problem_set, ctx.problems,
                              control or Control(), restore_rng(cfg.seed, ledger.rng_state), ctx.streaks,
                              free_workers=[f"w{i:02d}" for i in range(1, cfg.workers + 1)])
        ctx.started(interrupted=len(ledger.running()), stale_locks_removed=run.stale_locks)
        stop = await run.drive(scheduler.loop, merger)
        chosen = await run.select()
        await run.store.keep_index(ctx.shared.index, await run.store.main())  # with the solutions' commits
        await run.store.pack_refs()  # last: the run's result is written whether or not this is put off
        return run.end(stop, chosen)
