"""`solve_remote`: `gitswarm solve SET --run URL`, the coordinator's side of a remote run.

It opens (or creates) the local run repository, which is the remote's mirror, publishes the
run's settings and refs, and runs the `Coordinator` beside the engine's `Merger`. With
local slots it also runs a worker in-process against the same remote (`run_worker`, under
the name `LOCAL_NAME`), so local and remote workers follow one path.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread

from gitswarm.core.control import Control
from gitswarm.core.events import Listener
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.merger import Merger
from gitswarm.engine.run import RunContext, RunResult, open_run
from gitswarm.engine.runlock import clear_stale_locks, run_lock
from gitswarm.engine.shared import Model
from gitswarm.problems.model import ProblemSet
from gitswarm.remote import owner, publish
from gitswarm.remote.claims import Claims
from gitswarm.remote.coordinator import OWN_REFS, Coordinator
from gitswarm.remote.prune import PRUNE_BATCH, Pruner
from gitswarm.remote.spending import Spending
from gitswarm.remote.transport import Remote
from gitswarm.remote.worker import WorkerOptions, run_worker

LOCAL_NAME = "coordinator"
"""The name of the coordinator's own worker process, when it runs local slots."""
CLAIM_TTL_S = 600.0
"""A claim's time to live without renewal (workers renew every third of it)."""


def local_worker_folder(run: Path) -> Path:
    """Where the coordinator's in-process worker keeps its run repository."""
    return run.parent / f"{run.name}.worker"


async def solve_remote(cfg, problem_set: ProblemSet, url: str, model: Model, merger_model: Model,
                       listeners: list[Listener] | None = None, control: Control | None = None, *,
                       local_slots: int = 0, claim_ttl_s: float = CLAIM_TTL_S, patience_s: float = 600.0,
                       prune_batch: int = PRUNE_BATCH,
                       model_settings: dict | None = None, reviewer: Model | None = None) -> RunResult:
    """Coordinate the run on `url` until it stops; `cfg.run` is the local mirror."""
    git = GitThread()
    await anyio.to_thread.run_sync(owner.check_mirror, cfg.run, url)  # before a run is made there
    memory = await git(open_run, cfg, problem_set)
    await anyio.to_thread.run_sync(owner.bind_mirror, cfg.run, url)
    control = control or Control()
    with run_lock(cfg.run):
        await git(clear_stale_locks, cfg.run)
        remote = Remote(url, cfg.run)
        problems = [p for p in memory.problems() if not cfg.problem_ids or p in cfg.problem_ids]
        settings = publish.settings_of(cfg, problem_set, problems, claim_ttl_s)
        await git(publish.write_settings, memory, settings)
        await git(publish.write_stop, memory, None)  # a resumed run goes on
        publisher = await anyio.to_thread.run_sync(publish.Publisher, remote, OWN_REFS)
        await anyio.to_thread.run_sync(publisher.push, OWN_REFS)
        run = await RunContext.build(cfg, memory, git, problems, model, listeners, reviewer=reviewer)
        spending = Spending.of(run.ledger.episodes.values(), run.ledger.spending)
        run.counting(spending.in_flight)
        merger = Merger(run.shared, run.ledger, merger_model)
        coordinator = Coordinator(run.shared, run.ledger, merger, remote, run.streaks,
                                  Claims(remote, LOCAL_NAME, ttl_s=claim_ttl_s), publisher, spending=spending,
                                  patience_s=patience_s, pruner=Pruner(prune_batch))
        run.started(workers=local_slots, remote=remote.shown)
        try:
            return await _run(cfg, run, coordinator, control, url, model, local_slots, model_settings or {})
        finally:
            run.close()


async def _run(cfg, run: RunContext, coordinator: Coordinator, control: Control, url: str, model: Model,
               local_slots: int, model_settings: dict) -> RunResult:
    async with anyio.create_task_group() as tg:
        stop_merger = anyio.Event()
        tg.start_soon(coordinator.merger.run, stop_merger)
        if local_slots:
            options = WorkerOptions(url, local_worker_folder(cfg.run), LOCAL_NAME, local_slots, model_settings,
                                    references=cfg.problems)  # the coordinator holds the set, hidden parts too
            tg.start_soon(run_worker, options, model, None, Control())
        stop = await coordinator.run(control.stop)
        stop_merger.set()
    chosen = await coordinator.select()
    await coordinator.pruner.end(coordinator)  # the end state is published: what is left goes
    run.selected(chosen)
    run.stopped(stop)
    return RunResult.of(stop, run.ledger, chosen)

