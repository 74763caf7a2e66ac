"""`gitswarm log RUN`: the reasoning history, one readable block per contribution."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import user_errors


def log(
    run: Annotated[Path, typer.Argument(help="The run folder, e.g. runs/imo.", show_default=False)],
    problem: Annotated[str | None, typer.Option(help="Only this problem id.")] = None,
    worker: Annotated[str | None, typer.Option(help="Only this worker, e.g. w07.")] = None,
    kind: Annotated[str | None, typer.Option(
        help="Only this kind: note, lemma, attempt, review, code, summary, nomination, merge.")] = None,
    pending: Annotated[bool, typer.Option(
        "--pending", help="Include contributions not yet merged into main.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="Show at most N commits.")] = None,
    oneline: Annotated[bool, typer.Option("--oneline", help="One line per commit.")] = False,
) -> None:
    """Show the reasoning history of a run, newest first.

    Plain `git -C RUN log` shows the same commits; this view adds who built on what.
    """
    from gitswarm.memory.repo import Memory

    with user_errors():
        memory = Memory(run)
        commits = memory.log(problem, worker, kind, include_pending=pending, limit=limit)
    for c in commits:
        if oneline:
            typer.echo(f"{c.id[:10]} {c.author:<8} {c.subject}")
            continue
        when = datetime.datetime.fromtimestamp(c.time).strftime("%Y-%m-%d %H:%M:%S")
        typer.echo(f"commit {c.id}\n{c.author} · {when}"
                   + (f" · episode {c.trailers['Episode']}" if "Episode" in c.trailers else ""))
        typer.echo(f"\n    {c.subject}")
        if c.body:
            typer.echo("\n" + "\n".join(f"    {line}" for line in c.body.splitlines()))
        cited = c.informed_by
        if cited:
            typer.echo(f"\n    built on: {', '.join(x[:10] for x in cited)}")
        usage = c.trailers.get("Tokens")
        if usage:
            typer.echo(f"    model {c.trailers.get('Model', '?')} · tokens {usage} · "
                       f"USD {c.trailers.get('Cost-USD', '?')}")
        typer.echo("")
