"""`run_worker`: join a run on a git remote and run its episodes with the local engine.

The worker reads the run's settings from the remote (`publish.read_settings`), builds the
same `Shared` and `Scheduler` a local run uses, with `source.ClaimSource` as the scheduler's
`EpisodeSource` and no merger (the coordinator composes main): one configuration of the run
kernel (`engine/kernel.py` `Run`). It runs until the coordinator publishes the run's stop (or
its own stops: the user, its time limit, a model error no retry can fix).

The worker holds no hidden part of a problem. It runs the run's reproduce problems only when
its user gave it the problem set (`WorkerOptions.references`): their reference executables
are built from it as it starts, for its shells' PATH. Without it, it never claims them
(`ClaimSource.skip`), so no episode is told of a reference its shell lacks. On a machine
where no sandbox can be made, it claims no code problem at all (`skipped`): their programs
never run unconfined on a worker, whatever the coordinator was allowed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread

from gitswarm.core.control import Control
from gitswarm.core.events import Listener
from gitswarm.core.remote_events import ExitUnmarked
from gitswarm.core.stops import Stop, StopReason
from gitswarm.engine.config import ACROSS_PROCESSES, SolveConfig
from gitswarm.engine.context import CODE_KINDS
from gitswarm.engine.events import EventLog
from gitswarm.engine.kernel import Run
from gitswarm.engine.references import References, built_from
from gitswarm.engine.rngstate import restore_rng
from gitswarm.engine.shared import Model
from gitswarm.engine.swarm import Scheduler
from gitswarm.memory import books
from gitswarm.memory.conversations import CONVERSATIONS_REF
from gitswarm.memory.errors import NotARun
from gitswarm.memory.repo import META_REF, NOTES_REF, TRANSCRIPTS, Memory
from gitswarm.problems.model import Kind, ProblemSet
from gitswarm.remote import exits, layout, owner, publish
from gitswarm.remote.claims import Claims
from gitswarm.remote.errors import MissingRef, NameInUse
from gitswarm.remote.publish import RunStreaks
from gitswarm.remote.source import ClaimSource
from gitswarm.remote.spending import Published
from gitswarm.remote.transport import Remote
from gitswarm.remote.urls import mask
from gitswarm.sandbox import Containment, containment


def slots(name: str, count: int) -> list[str]:
    """The worker's slot names: distinct across processes, so reviews count across them."""
    return [f"{name}-w{i:02d}" for i in range(1, count + 1)]


def join(remote: Remote, name: str) -> dict:
    """Fetch what a worker needs to start (main, meta, its own refs) and return the settings.
    A worker restarted in a fresh folder under the same name goes on from its pushed book."""
    remote.fetch([f"+{layout.MAIN}:{layout.MAIN}", f"+{META_REF}:{META_REF}", layout.workers_refspec(name)])
    mirror = remote.gitdir()
    for local in ("refs/gitswarm/ledger", NOTES_REF, books.ref_name(TRANSCRIPTS), CONVERSATIONS_REF):
        pushed = mirror.ref(layout.worker_ref(name, local))
        if pushed is not None and mirror.ref(local) is None:
            mirror.move(local, pushed, None)
    return publish.read_settings(mirror, remote.shown)


@dataclass(frozen=True)
class WorkerOptions:
    """One worker process's own settings; the run's come from the remote."""

    url: str
    folder: Path
    """Its run repository and mirror of the remote."""
    name: str
    """Unique among the run's worker processes: its refs are refs/gitswarm/workers/<name>/."""
    slots: int
    """Episodes in flight at once (C)."""
    model: dict
    """Its SolveConfig's model part (model, api_base, prices, timeouts, the merger's and the
    reviewer's, ...), by field name: its flags', or a coordinator's own, whole, for its local
    worker; `SolveConfig.models` derives each role's model from it."""
    patience_s: float = 600.0
    """How long to wait with nothing to claim for the coordinator's stop."""
    references: Path | None = None
    """The problem set (folder or shipped name) the run's reproduce problems' references are
    built from; None: this worker runs no reproduce problem."""


RESUME_GRACE_S = 60.0
"""How long a worker that finds the run stopped as it joins waits for it to be resumed."""
RESUME_POLL_S = 1.0


def worker_config(options: WorkerOptions, settings: dict) -> SolveConfig:
    """The worker's SolveConfig: the run's part whole, as its coordinator published it, with
    its own model part and slots (a run part of other fields than this gitswarm's is refused:
    `publish.OtherSettings`). The rule that K reviews need K + 1 workers is the run's (across
    every process), not this one's."""
    run = publish.run_part(settings, mask(options.url))
    values = {"problems": Path(settings["set"]), "run": options.folder, "workers": options.slots, **run,
              **options.model}
    return SolveConfig.model_validate(values, context={ACROSS_PROCESSES: True})


async def join_settings(options: WorkerOptions, say: Callable[[str], None] = lambda _: None) -> SolveConfig:
    """The worker's SolveConfig, read from the run on the remote; a worker started before its
    coordinator waits for the run to be published, up to its patience, and one that finds the
    run stopped waits a while for it to be resumed (`resumed`). `say` tells the user why."""
    held = owner.check_worker(options.folder, options.url, options.name)
    options.folder.mkdir(parents=True, exist_ok=True)
    remote = Remote(options.url, options.folder)
    deadline = time.monotonic() + options.patience_s
    while True:
        try:
            cfg = worker_config(options, await anyio.to_thread.run_sync(join, remote, options.name))
            owner.bind_worker(options.folder, options.url, options.name, held)
            break
        except (MissingRef, NotARun):
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.5)
    await resumed(remote, min(RESUME_GRACE_S, options.patience_s), say)
    return cfg


async def resumed(remote: Remote, grace_s: float, say: Callable[[str], None]) -> None:
    """A run found stopped as the worker joins may be resuming (its coordinator, started
    again, clears the stop as it starts; workers started with it would otherwise read the old
    stop and end at once): wait up to `grace_s` for the stop to clear. If it still holds, the
    worker ends on it as on any stop."""
    stop = await anyio.to_thread.run_sync(_stop_of, remote)
    if stop is None:
        return
    say(f"the run on {remote.shown} is stopped ({stop.detail}); waiting up to {grace_s:.0f} s for its "
        "coordinator to resume it")
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        await anyio.sleep(RESUME_POLL_S)
        if await anyio.to_thread.run_sync(_stop_of, remote) is None:
            say("the run was resumed; joining it")
            return


def _stop_of(remote: Remote) -> Stop | None:
    """The run's stop as the remote has it now (its ref fetched into the mirror)."""
    try:
        remote.fetch([f"+{publish.STOP_REF}:{publish.STOP_REF}"])
    except MissingRef:
        return None
    return publish.read_stop(remote.gitdir())


async def run_worker(options: WorkerOptions, model: Model, listeners: list[Listener] | None = None,
                     control: Control | None = None, say: Callable[[str], None] = lambda _: None,
                     reviewer: Model | None = None) -> Stop:
    """Claim and run the run's episodes until it stops; returns why this worker stopped.
    `say` tells the user what this worker leaves to others (`own_references`); its review
    episodes run on `reviewer` where it is given."""
    held = owner.check_worker(options.folder, options.url, options.name)
    options.folder.mkdir(parents=True, exist_ok=True)
    remote = Remote(options.url, options.folder)
    settings = await anyio.to_thread.run_sync(join, remote, options.name)
    owner.bind_worker(options.folder, options.url, options.name, held)
    await anyio.to_thread.run_sync(exits.clear, remote, options.name)
    cfg = worker_config(options, settings)
    sandbox = anyio.CapacityLimiter(2)
    unconfinable = no_sandbox_for(settings, await anyio.to_thread.run_sync(containment), say)
    references = None if unconfinable else await own_references(options, settings, sandbox, say)
    skip, why = skipped(settings, references, unconfinable)
    async with Run.opened(cfg, partial(Memory, options.folder), references) as run:
        return await _work(run, options, settings, remote, model, listeners, control or Control(), sandbox=sandbox,
                           skip=skip, skip_why=why, say=say, reviewer=reviewer)


def no_sandbox_for(settings: dict, found: Containment, say: Callable[[str], None]) -> frozenset[str]:
    """The run's code problems when this machine cannot make a sandbox (`found`: they are then
    never claimed here, and `say` tells why and what to install); else none."""
    code = sorted(pid for pid, p in settings["problems"].items() if Kind(p["kind"]) in CODE_KINDS)
    if not code or found.backend is not None:
        return frozenset()
    say(f"this worker runs no code problem ({', '.join(code)}): {found.problem()}")
    return frozenset(code)


def skipped(settings: dict, references: References | None, unconfinable: frozenset[str]) -> tuple[frozenset[str], str]:
    """The problems this worker never claims, and why (as `ClaimSource.skip_why` says it)."""
    if unconfinable:
        return unconfinable, ("a code problem, and this machine has no sandbox for its programs "
                              "(`gitswarm sandbox check` says what to install)")
    if references is None and (wanted := reproduce_problems(settings)):
        return frozenset(wanted), ClaimSource.skip_why
    return frozenset(), ClaimSource.skip_why


def reproduce_problems(settings: dict) -> dict[str, str]:
    """The run's reproduce problems: id -> title."""
    return {pid: p["title"] for pid, p in settings["problems"].items() if p["kind"] == Kind.REPRODUCE.value}


async def own_references(options: WorkerOptions, settings: dict, limiter: anyio.CapacityLimiter,
                         say: Callable[[str], None]) -> References | None:
    """The references of the run's reproduce problems, every one built from the worker's
    `references` set (`ReferencesRefused` when it cannot give one); None when the run has
    none, or the worker no set: it then says which problems it leaves to others."""
    wanted = reproduce_problems(settings)
    if not wanted:
        return None
    ids = ", ".join(sorted(wanted))
    if options.references is None:
        say(f"this worker runs no reproduce problem ({ids}): it has no reference executables for them; to run "
            "them, start it with --references SET, SET being the problem set the run's coordinator runs")
        return None
    say(f"building the reference executables of {ids} from {options.references}")
    return await built_from(options.references, wanted, limiter)


def _runnable(problem_set: ProblemSet, references: References | None) -> ProblemSet:
    """The run's problems, each reproduce one with its reference's documented name when the
    worker has its reference (so the prompt names the executable on the shell's PATH), and the
    image its programs run in, as the worker's set has them."""
    if references is None:
        return problem_set

    def runnable(p):
        known = next((q for q in references.problems.problems if q.id == p.id), None)
        image = {"image": known.image, "grade_image": known.grade_image, "reference_dir": known.reference_dir} \
            if known is not None else {}
        return replace(p, executable=references.executable(p.id), **image)

    return replace(problem_set, problems=[runnable(p) if p.kind is Kind.REPRODUCE else p
                                          for p in problem_set.problems])


async def _work(run: Run, options: WorkerOptions, settings: dict, remote: Remote, model: Model,
                listeners: list[Listener] | None, control: Control, *, sandbox: anyio.CapacityLimiter,
                skip: frozenset[str], skip_why: str, say: Callable[[str], None], reviewer: Model | None = None) -> Stop:
    problems = list(settings["problems"])
    spending, streaks = Published(options.name), RunStreaks(run.cfg.no_progress)
    ctx = await run.build(problems, model, listeners, sandbox=sandbox, elsewhere=spending.elsewhere, streaks=streaks,
                          reviewer=reviewer)
    shared, ledger = ctx.shared, ctx.ledger
    claims = Claims(remote, options.name, ttl_s=float(settings["claim_ttl_s"]))
    source = ClaimSource(remote, claims, run.memory, shared, settings, claims.ttl_s, patience_s=options.patience_s,
                         spending=spending, streaks=streaks, skip=skip, skip_why=skip_why, say=say)
    scheduler = Scheduler(shared, ledger, source, _runnable(publish.problem_set_of(settings), run.references),
                          [p for p in problems if p not in skip], control,
                          restore_rng(f"{run.cfg.seed}/{options.name}", None), ctx.streaks,
                          free_workers=slots(options.name, options.slots))
    ctx.started(False, worker=options.name, remote=remote.shown, own_spending=False)
    why: Stop | BaseException | None = Stop(StopReason.USER, "interrupted")
    try:
        why = stop = await run.drive(partial(_claiming, source, scheduler))
        run.end(stop, worker=options.name)
        return stop
    except NameInUse:
        why = None  # the refs under this name are another process's: its mark is not ours to push
        raise
    except Exception as exc:
        why = exc
        raise
    finally:
        if why is not None:
            await _leave(remote, options.name, why, ctx.events)


async def _claiming(source: ClaimSource, scheduler: Scheduler) -> Stop:
    """The scheduler's loop over its claims, which the source renews until it ends."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(source.renew)
        stop = await scheduler.loop()
        tg.cancel_scope.cancel()
    return stop


async def _leave(remote: Remote, name: str, why: Stop | BaseException, events: EventLog) -> None:
    """Mark on the remote that this worker left a run that goes on (`exits.py`); the stop of a
    run that stopped (as last fetched) says so for every worker already. Shielded from the
    cancellation that may be ending the worker, and bounded by the transport's timeout."""
    with anyio.CancelScope(shield=True):
        if await anyio.to_thread.run_sync(publish.read_stop, remote.gitdir()) is not None:
            return
        failed = await anyio.to_thread.run_sync(exits.mark, remote, name, why)
    if failed:
        events.emit(ExitUnmarked(worker=name, detail=failed))
