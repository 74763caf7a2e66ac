"""`gitswarm worker URL`: join a run on a git remote, claim its episodes and run them."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import anyio
import typer

from gitswarm.cli.common import STOP_EXIT, Exit, fail, user_errors
from gitswarm.cli.fieldopts import field_values, option
from gitswarm.cli.running import signals
from gitswarm.cli.solve import (
    MODEL,
    RUN,
    ApiBaseOpt,
    ConcurrentCallsOpt,
    EffortOpt,
    IdleTimeoutOpt,
    JsonOpt,
    MaxOutputOpt,
    ModelOpt,
    ReplyTimeoutOpt,
    ReviewerApiBaseOpt,
    ToolProtocolOpt,
    TuiOpt,
    _want_tui,
)
from gitswarm.engine.config import PARTS, SolveConfig

SLOTS = SolveConfig.model_fields["workers"].default
"""A worker's episodes in flight by default: a run's (`SolveConfig.workers`)."""


def worker(
    url: Annotated[str, typer.Argument(help="The run's git remote (file://, git://, ssh://, https://, "
                                            "user@host:path), as given to `gitswarm solve SET --run URL`.",
                                       show_default=False)],
    model: ModelOpt = None,
    slots: Annotated[int, option(
        "workers", "Episodes in flight at once.", "--workers", metavar="N", rich_help_panel=RUN)] = SLOTS,
    name: Annotated[str | None, typer.Option(
        metavar="NAME", rich_help_panel=RUN,
        help="This process's name, unique in the run: its pushes go under refs/gitswarm/workers/<name>/ "
             "and its episodes' workers are <name>-w01, ... (default: the host name and process id).")] = None,
    folder: Annotated[Path | None, typer.Option(
        "--dir", metavar="DIR", rich_help_panel=RUN,
        help="Its local run repository, a mirror of the remote (default runs/workers/<host and path of the "
             "URL>/<name>).")] = None,
    api_base: ApiBaseOpt = None,
    max_output_tokens: MaxOutputOpt = None,
    reasoning_effort: EffortOpt = None,
    tool_protocol: ToolProtocolOpt = None,
    idle_timeout: IdleTimeoutOpt = None,
    reply_timeout: ReplyTimeoutOpt = None,
    max_concurrent_calls: ConcurrentCallsOpt = None,
    price_in: Annotated[float | None, option(
        "price_in_per_mtok", "USD per million input tokens.", metavar="USD", rich_help_panel=MODEL)] = None,
    price_out: Annotated[float | None, option(
        "price_out_per_mtok", "USD per million output tokens.", metavar="USD", rich_help_panel=MODEL)] = None,
    reviewer_model: Annotated[str | None, option(
        "reviewer_model", "Model for this worker's review episodes, in a run whose reviews are assigned or "
        "blind (default --model).", metavar="MODEL", rich_help_panel=MODEL)] = None,
    reviewer_api_base: ReviewerApiBaseOpt = None,
    patience: Annotated[float, typer.Option(
        min=1, metavar="SECONDS", rich_help_panel=RUN,
        help="Seconds to wait with nothing to claim before giving up on the coordinator.")] = 600.0,
    references: Annotated[Path | None, typer.Option(
        metavar="SET", rich_help_panel=RUN,
        help="The problem set the coordinator runs (a folder or a shipped set's name): the reference "
             "executables of the run's reproduce problems are built from it, so this worker runs them too. "
             "Without it, it leaves them to other workers.")] = None,
    experiment: Annotated[bool, typer.Option(
        "--experiment", rich_help_panel=RUN,
        help="URL is the [remote] url of a `gitswarm experiment` spec: join the experiment's runs one after "
             "another (each in DIR/<run>), until every run is finished.")] = False,
    as_json: JsonOpt = False,
    tui: TuiOpt = None,
) -> None:
    """Join a run on a git remote: read its settings from the repository (no problem files
    needed, but for the reference executables of reproduce problems: --references), claim
    episodes, run them and push the results, until the coordinator stops the run.

    Credentials are git's own (ssh keys, credential helpers); gitswarm never prints or stores
    them. Exit 0 when the run stopped, 1 on a model error no retry can fix or an unreachable
    remote, 2 on bad input, 130 on Ctrl-C.
    """
    from gitswarm.models import credentials
    from gitswarm.remote.worker import WorkerOptions

    own = {field: value for field, value in field_values(locals()).items()
           if field in PARTS["model"] and value is not None}
    with user_errors():
        if not model:
            raise fail("give --model (or GITSWARM_MODEL): the litellm model string this worker runs")
        name = name or _default_name()
        hint = credentials.credentials_hint(model, api_base=api_base, api_key=None)
        if hint:
            raise fail(hint)
        from gitswarm.remote.owner import default_worker_folder

        options = WorkerOptions(url, folder or default_worker_folder(url, name), name, slots, own, patience,
                                references)
        if experiment and tui:
            raise fail("the dashboard shows one run, and --experiment joins one after another: give --no-tui")
        outcome = _run_tui(options) if _want_tui(tui, as_json) and not experiment else _run(options, as_json,
                                                                                            experiment)
        if "error" in outcome:
            raise outcome["error"]
    stop = outcome.get("stop")
    if stop is None:
        typer.echo("gitswarm: stopped at once; its claims expire and other workers run them", err=True)
        raise typer.Exit(int(Exit.INTERRUPTED))
    if not as_json:
        typer.echo(f"worker {name}: {stop.detail}")
    raise typer.Exit(0 if stop.reason in STOP_ENDED else int(STOP_EXIT[stop.reason]))


STOP_ENDED = ("budget", "episode_cap", "settled", "no_progress", "token_cap", "usd_cap", "time_limit")
"""The run's own ends, as the coordinator publishes them: the worker did its part (exit 0)."""


def _default_name() -> str:
    import os
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:40] + f"-{os.getpid()}"


def _run(options, as_json: bool, experiment: bool = False) -> dict:
    """The worker on a fresh event loop with Ctrl-C handling, one line (or JSON) per event;
    with `experiment`, following the experiment's runs one after another."""
    from gitswarm.cli.progress import printer
    from gitswarm.core.control import Control

    control, outcome = Control(), {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(signals, control, tg.cancel_scope)
            try:
                work = follow_and_work if experiment else join_and_work
                outcome["stop"] = await work(options, [printer(as_json)], control,
                                             lambda text: typer.echo(f"gitswarm: {text}", err=True))
            except Exception as exc:  # handed to user_errors() outside the loop
                outcome["error"] = exc
            tg.cancel_scope.cancel()

    anyio.run(main)
    return outcome


def _run_tui(options) -> dict:
    """The worker inside the dashboard, as `solve` runs its engine there: this process's
    episodes live, its folder read as the run it mirrors. Stays open at the end until q,
    unless stdin is not a terminal."""
    from gitswarm.core.control import Control
    from gitswarm.tui.app import Dashboard

    control = Control()
    app = Dashboard(options.folder, engine=worker_engine(options, control, lambda text: app.notify(text, timeout=30)),
                    control=control, exit_when_done=not sys.stdin.isatty())
    app.state.header.waiting = "starting: loading the model library and joining the run…"
    app.run()
    if app.error is not None:
        return {"error": app.error}
    return {"stop": app.result} if app.result is not None else {}


def worker_engine(options, control, say: Callable[[str], None]):
    """The dashboard's engine for a worker: a listener in, the worker's Stop out."""
    return lambda listener: join_and_work(options, [listener], control, say)


async def join_and_work(options, listeners: list, control, say: Callable[[str], None]):
    """Read the run's settings from the remote (`say` tells the user why it waits), then claim
    and run its episodes until it stops; returns why this worker stopped."""
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.remote.worker import join_settings, run_worker
    from gitswarm.telemetry import traced

    models = (await join_settings(options, say)).models  # a worker merges nothing: no merger's
    model = LiteLLMModel(models.worker)
    reviewer = LiteLLMModel(models.reviewer, turns=model.turns) if models.reviewer is not None else None
    async with traced(listeners) as listeners:  # with a tracer when OTEL_EXPORTER_OTLP_ENDPOINT asks
        return await run_worker(options, model, listeners, control, say, reviewer=reviewer)


async def follow_and_work(options, listeners: list, control, say: Callable[[str], None]):
    """`join_and_work` on each run of the experiment at `options.url`, one after another
    (`remote/follow.py`); returns why this worker stopped."""
    from gitswarm.remote.follow import follow

    return await follow(options, lambda one: join_and_work(one, listeners, control, say), control, say)
