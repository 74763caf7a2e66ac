"""Running a swarm from the CLI: a fresh event loop with Ctrl-C handling, or the engine inside
the dashboard; the run's models (`SolveConfig.models`) turned into model clients; the summary
printed at the end.
Shared by `solve`, `demo` and `worker`."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import typer

from gitswarm.cli.common import STOP_EXIT, Exit, user_errors
from gitswarm.report.lines import spent_line


@dataclass(frozen=True)
class RemoteRun:
    """`--run URL`: coordinate the run on a git remote, with `local_slots` episodes of our own."""

    url: str
    local_slots: int
    claim_ttl_s: float
    patience_s: float = 600.0
    prune_batch: int = 64


def refuse_busy(run: Path) -> None:
    """A run another gitswarm is working on is refused at once, before the model library loads
    (seconds); the engine takes the run lock itself, so this only answers sooner."""
    from gitswarm.core.runfiles import LOCK_NAME
    from gitswarm.engine.runlock import run_lock

    if (Path(run) / LOCK_NAME).is_file():
        with run_lock(run):
            pass


def clients(models):
    """The model clients of a run's `models` (`engine.modelsettings.ModelSettings`): the workers',
    the merger's and the reviewer's (None where the reviews run on the workers' model), counting
    their turns together."""
    from gitswarm.models.client import LiteLLMModel

    model = LiteLLMModel(models.worker)
    merger = LiteLLMModel(models.merger, turns=model.turns)
    reviewer = LiteLLMModel(models.reviewer, turns=model.turns) if models.reviewer is not None else None
    return model, merger, reviewer


def missing_credentials(models) -> str | None:
    """What to set for the first of a run's `models` (the workers', the merger's, the
    reviewer's) whose provider wants credentials this process does not have; None: none is
    missing. Checked before anything is spent, so a reviewer on another provider fails at the
    start, not at the first review."""
    from gitswarm.models.credentials import credentials_hint

    seen = set()
    for role, config in (("", models.worker), ("the merger's model: ", models.merger),
                         ("the reviewer's model: ", models.reviewer)):
        key = None if config is None else (config.model, config.api_base, config.api_key)
        if key is None or key in seen:
            continue
        seen.add(key)
        hint = credentials_hint(config.model, api_base=config.api_base, api_key=config.api_key)
        if hint:
            return role + hint
    return None


def run_swarm(cfg, problem_set, as_json: bool, responder=None, faults=None, tui: bool = False,
              personality: str = "openai", remote: RemoteRun | None = None, after=None) -> int:
    """Run on a fresh event loop with Ctrl-C handling (or inside the dashboard with `tui`);
    returns the exit code. With a `responder`, the models are served by the local fake
    server playing `personality` (the offline demo). `after` (async, no arguments) runs in the
    dashboard once the run has ended by itself, so what it stores shows there."""
    from functools import partial

    from gitswarm.core.control import Control
    from gitswarm.fakeserver import serve

    control = Control()
    fake = partial(serve, responder, faults, personality=personality) if responder is not None else None
    if remote is not None and not (tui or as_json):
        _mirror_line(cfg, remote)
    outcome = _run_tui(cfg, problem_set, fake, control, remote, after) if tui else _run_plain(
        cfg, problem_set, as_json, fake, control, remote)
    if "error" in outcome:
        with user_errors():
            raise outcome["error"]
    result = outcome.get("result")
    if result is None:
        typer.echo("gitswarm: stopped at once; run the same command to resume", err=True)
        return 130
    if not as_json:
        _summary(cfg, result)
    code = STOP_EXIT[result.reason.reason]
    if code == Exit.FAILED:
        typer.echo(f"gitswarm: the run stopped: {result.reason.detail}. What was committed is kept.", err=True)
    return int(code)


def _mirror_line(cfg, remote: RemoteRun) -> None:
    """Where the coordinator keeps the remote run here: the folder `status` and `report` read."""
    from gitswarm.remote.urls import mask

    typer.echo(f"coordinating the run on {mask(remote.url)}; its mirror here is {cfg.run} "
               f"(`gitswarm status {cfg.run}`; from anywhere, `gitswarm status URL`)")


async def run_engine(cfg, problem_set, listeners, control, fake=None, remote: RemoteRun | None = None):
    """The engine on the current loop; with `fake` (a fake server to start), against it; with
    `remote`, as the coordinator of a run on a git remote."""
    from gitswarm.engine.modelsettings import ModelSettings
    from gitswarm.engine.run import solve as engine_solve
    from gitswarm.telemetry import traced

    async def swarm(api_base: str | None):
        model, merger, reviewer = clients(ModelSettings.of(cfg, api_base))
        if remote is None:
            return await engine_solve(cfg, problem_set, model, merger, listeners, control, reviewer=reviewer)
        from gitswarm.remote.solve import solve_remote

        own = cfg.part("model") | ({"api_base": api_base} if api_base else {})  # its local worker's, whole
        return await solve_remote(cfg, problem_set, remote.url, model, merger, listeners, control,
                                  local_slots=remote.local_slots, claim_ttl_s=remote.claim_ttl_s,
                                  patience_s=remote.patience_s, prune_batch=remote.prune_batch,
                                  model_settings=own, reviewer=reviewer)

    async with traced(listeners) as listeners:  # with a tracer when OTEL_EXPORTER_OTLP_ENDPOINT asks
        if fake is None:
            return await swarm(None)
        async with fake() as server:
            return await swarm(server.url)


def _run_plain(cfg, problem_set, as_json: bool, fake, control, remote=None) -> dict:
    from gitswarm.cli.progress import printer

    outcome: dict = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(signals, control, tg.cancel_scope)
            try:
                outcome["result"] = await run_engine(cfg, problem_set, [printer(as_json)], control, fake, remote)
            except Exception as exc:  # handed to user_errors() outside the loop, or re-raised there
                outcome["error"] = exc
            tg.cancel_scope.cancel()

    anyio.run(main)
    return outcome


def _run_tui(cfg, problem_set, fake, control, remote=None, after=None) -> dict:
    """The engine as an async worker inside the dashboard; the app stays open after the run
    until the user quits, unless stdin is not a terminal (then it exits when the run ends)."""
    from gitswarm.tui.app import Dashboard

    def engine(listener):
        return run_engine(cfg, problem_set, [listener], control, fake, remote)

    from gitswarm.models.credentials import has_price

    models = cfg.models
    priced = has_price(models.worker) and has_price(models.merger)
    app = Dashboard(cfg.run, engine=engine, control=control, exit_when_done=not sys.stdin.isatty(),
                    max_usd=cfg.max_usd, after=after, priced=priced)
    app.run()
    outcome: dict = {}
    if app.error is not None:
        outcome["error"] = app.error
    elif app.result is not None:
        outcome["result"] = app.result
    return outcome


def with_signals(control, work) -> dict:
    """Run `work()` on one event loop with Ctrl-C handled as `solve` does: `{"result": ...}`, or
    `{"error": exc}` for the exception it raised, handed to `user_errors()` outside the loop."""
    outcome: dict = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(signals, control, tg.cancel_scope)
            try:
                outcome["result"] = await work()
            except Exception as exc:  # re-raised by the caller, outside the loop
                outcome["error"] = exc
            tg.cancel_scope.cancel()

    anyio.run(main)
    return outcome


async def signals(control, scope) -> None:
    """Ctrl-C: no episode starts, those in flight finish; again: they are cut short at once
    (transcripts and spending kept); a third time: stop now, losing what they have not written.
    SIGTERM (what `timeout`, Slurm and Kubernetes send): no episode starts, and those in flight
    get the run's `stop_grace_s` (20 s by default) before they are cut short."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            if control.cut.is_set():
                scope.cancel()
                return
            if control.stop.is_set():
                control.cut_now()
                typer.echo("gitswarm: cutting the episodes in flight short, keeping their transcripts (once more "
                           "to stop at once); the same command resumes the run", err=True)
            elif signum == signal.SIGTERM:
                control.stop_bounded()
                typer.echo("gitswarm: SIGTERM: no episode starts; those in flight get the stop grace, then are "
                           "cut short; the same command resumes the run", err=True)
            else:
                control.stop.set()
                typer.echo("gitswarm: finishing the episodes in flight (Ctrl-C again to cut them short); the "
                           "same command resumes the run", err=True)


def _summary(cfg, result) -> None:
    cost = spent_line(result.cost, result.cost_known)
    failed = STOP_EXIT[result.reason.reason] == Exit.FAILED  # its detail is the last line, on stderr
    said = f"Stopped ({result.reason.reason.value})" if failed else result.reason.detail
    typer.echo(f"\n{said}. {result.charged} charged episodes of {cfg.budget} "
               f"({result.episodes} in all, cap {cfg.max_episodes}), {result.tokens} tokens, {cost}.")
    for problem, picked in result.selected.items():
        mark = ("by nominations" if cfg.verify == 0 else "verified" if picked and picked.verified
                else "rejected by reviews: every candidate had a critical review; this one the fewest"
                if picked and picked.rejected else "unverified: no candidate was verified within the run")
        shown = f"{picked.path} ({mark}; {picked.nominations} nominations)" if picked else "no candidate"
        typer.echo(f"  {problem:28} {shown}")
    typer.echo(f"\nRead the reasoning: git -C {cfg.run} log --graph --oneline main")
    typer.echo(f"Read a solution: gitswarm show {cfg.run} PROBLEM   (--candidate PATH, --review PATH)")
    if STOP_EXIT[result.reason.reason] == Exit.INTERRUPTED:  # `q` in the dashboard, or Ctrl-C
        typer.echo("Resume: run the same command again (nothing spent is spent again).")
