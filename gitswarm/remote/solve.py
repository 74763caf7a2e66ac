"""`solve_remote`: `gitswarm solve SET --run URL`, the coordinator's side of a remote run.

It opens (or creates) the local run repository, which is the remote's mirror, publishes the
run's settings and refs, and runs the `Coordinator` beside the engine's `Merger`: one
configuration of the run kernel (`engine/kernel.py` `Run`), the coordinator its intake. With
local slots it also runs a worker in-process against the same remote (`run_worker`, under
the name `LOCAL_NAME`), so local and remote workers follow one path.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread

from gitswarm.core.control import Control
from gitswarm.core.events import Listener
from gitswarm.engine.kernel import Run, RunResult
from gitswarm.engine.merger import Merger
from gitswarm.engine.run import open_run
from gitswarm.engine.shared import Model
from gitswarm.memory.repo import Memory
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
    control = control or Control()
    async with Run.opened(cfg, partial(_mirror, cfg, problem_set, url)) as run:
        remote, problems = Remote(url, cfg.run), run.chosen()
        publisher = await _published(run, remote, publish.settings_of(cfg, problem_set, problems, claim_ttl_s))
        ctx = await run.build(problems, model, listeners, reviewer=reviewer)
        spending = Spending.of(ctx.ledger.episodes.values(), ctx.ledger.spending)
        ctx.counting(spending.in_flight)
        merger = Merger(ctx.shared, ctx.ledger, merger_model)
        coordinator = Coordinator(ctx.shared, ctx.ledger, merger, remote, ctx.streaks,
                                  Claims(remote, LOCAL_NAME, ttl_s=claim_ttl_s), publisher, spending=spending,
                                  patience_s=patience_s, pruner=Pruner(prune_batch))
        ctx.started(workers=local_slots, remote=remote.shown)
        options = WorkerOptions(url, local_worker_folder(cfg.run), LOCAL_NAME, local_slots, model_settings or {},
                                references=cfg.problems)  # the coordinator holds the set, hidden parts too
        local = [partial(run_worker, options, model, None, Control(), reviewer=reviewer)] if local_slots else []
        stop = await run.drive(partial(coordinator.run, control.stop), merger, local)
        chosen = await coordinator.select()
        await run.store.keep_index(ctx.shared.index, await run.store.main())  # with the solutions' commits
        await coordinator.pruner.end(coordinator)  # the end state is published: what is left goes
        return run.end(stop, chosen)


def _mirror(cfg, problem_set: ProblemSet, url: str) -> Memory:
    """The run repository that mirrors `url`: checked to be no other remote's before a run is
    made there, then bound to it."""
    owner.check_mirror(cfg.run, url)
    memory = open_run(cfg, problem_set)
    owner.bind_mirror(cfg.run, url)
    return memory


async def _published(run: Run, remote: Remote, settings: dict) -> publish.Publisher:
    """The run's settings written, its stop cleared (a resumed run goes on), and its refs pushed."""
    await run.store.run(publish.write_settings, run.memory, settings)
    await run.store.run(publish.write_stop, run.memory, None)
    publisher = await anyio.to_thread.run_sync(publish.Publisher, remote, OWN_REFS)
    await anyio.to_thread.run_sync(publisher.push, OWN_REFS)
    return publisher
