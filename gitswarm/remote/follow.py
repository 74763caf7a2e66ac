"""`gitswarm worker URL --experiment`: a worker that follows an experiment from run to run.

An experiment whose runs live on git remotes (its spec's `[remote]`) lists them, with their
states, in `<url>/experiment.git` (`experiment/remote.py`). A following worker reads that list,
joins the first run that is running and that it has not worked on yet, works on it as any
worker does until that run stops, then reads the list again. It ends when the experiment says
every run is finished, on a stop of its own (the user, a model error no retry can fix), or
after `patience` seconds in which no run was there to join.

Each run gets its own folder, `<folder>/<run>`, so one worker's runs never mix.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio
import anyio.to_thread

from gitswarm.core.control import Control
from gitswarm.core.stops import Stop, StopReason
from gitswarm.remote.errors import MissingRef, NoRepository
from gitswarm.remote.transport import Remote
from gitswarm.remote.worker import WorkerOptions

INDEX = "experiment.git"
"""The repository, beside the runs' (`<url>/<run>.git`), that lists an experiment's runs."""
INDEX_REF = "refs/gitswarm/experiment"
"""Its one ref: a commit holding `runs.json` ({"runs": [{name, url, state}], "finished": bool})."""
RUN_ENDS = frozenset({StopReason.BUDGET, StopReason.EPISODE_CAP, StopReason.SETTLED, StopReason.NO_PROGRESS,
                      StopReason.TOKEN_CAP, StopReason.USD_CAP, StopReason.NO_WORKERS})
"""The stops a run's coordinator publishes: the run ended, the worker goes on to the next."""
LOOK_S = 2.0
"""How often the list is read again while no run is there to join."""

Work = Callable[[WorkerOptions], Awaitable[Stop]]
"""Joins one run and works on it until it stops (`cli.worker.join_and_work`)."""


def index_url(base: str) -> str:
    return f"{base.rstrip('/')}/{INDEX}"


def read_index(remote: Remote) -> dict | None:
    """The experiment's list as its last push left it; None before its first (the experiment
    makes its repository as it starts, under file://)."""
    try:
        remote.fetch([f"+{INDEX_REF}:{INDEX_REF}"])
    except (MissingRef, NoRepository):
        return None
    mirror = remote.gitdir()
    tip = mirror.ref(INDEX_REF)
    data = mirror.file(tip, "runs.json") if tip is not None else None
    return json.loads(data) if data is not None else None


async def follow(options: WorkerOptions, work: Work, control: Control,
                 say: Callable[[str], None] = lambda _: None) -> Stop:
    """Work on the experiment at `options.url` (its [remote] url) run after run; returns why
    the worker stopped."""
    remote = Remote(index_url(options.url), options.folder / "experiment-index")
    done: list[str] = []
    last: Stop | None = None
    waiting_since, told = time.monotonic(), False
    while not control.stop.is_set():
        listed = await anyio.to_thread.run_sync(read_index, remote)
        if listed is not None and listed.get("finished"):
            return Stop(last.reason if last else StopReason.SETTLED,
                        f"every run of the experiment is finished ({len(done)} of them joined)")
        run = next((r for r in (listed or {}).get("runs", []) if r.get("state") == "running"
                    and r.get("name") not in done), None)
        if run is None:
            if listed is None and not told:
                say(f"waiting for the experiment's list of runs on {remote.shown} (up to {options.patience_s:.0f} s): "
                    "it is pushed as `gitswarm experiment` starts with this [remote] url")
                told = True
            if time.monotonic() - waiting_since > options.patience_s:
                return Stop(StopReason.TIME_LIMIT, f"no run of the experiment on {remote.shown} to join for "
                            f"{options.patience_s:.0f} s (is `gitswarm experiment` running?)")
            await anyio.sleep(LOOK_S)
            continue
        say(f"joining the experiment's run {run['name']} on {run['url']}")
        last = await work(replace(options, url=run["url"], folder=options.folder / run["name"]))
        done.append(run["name"])
        if last.reason not in RUN_ENDS:
            return last
        waiting_since = time.monotonic()
    return Stop(StopReason.USER, "stopped by the user")
