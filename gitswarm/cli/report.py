"""`gitswarm report RUN`: per-problem results, cost, tokens, time and compounding figures."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import run_folder, user_errors


class Format(StrEnum):
    md = "md"
    json = "json"
    html = "html"


def report(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/imo, or the git remote URL of a run "
                                       "there (read from a temporary copy).", show_default=False)],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="md, json or html (html draws the "
                                        "contribution graphs with the `report` extra, and is written "
                                        "without them when it is not installed).")] = Format.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of "
                                                "stdout.")] = None,
) -> None:
    """Report a run: its model, budget, workers and verification rule; each problem's selected
    solution, nominations, grade, cost, tokens, time, episodes, every candidate's reviews and
    revisions, and how the work compounded (the report defines its figures). Read-only."""
    from gitswarm.remote.urls import is_remote, mask
    from gitswarm.report import render
    from gitswarm.report.collect import collect

    with user_errors(), run_folder(run) as folder:
        data, graph = collect(folder, mask(run) if is_remote(run) else None)
    if fmt is Format.json:
        text = render.to_json(data)
    elif fmt is Format.md:
        text = render.to_markdown(data)
    else:
        text = render.to_html(data, graph, _can_draw())
    if output is None:
        typer.echo(text, nl=False)
    else:
        with user_errors():
            output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}")


def _can_draw() -> bool:
    """The drawing libraries import; if not, one line on stderr says how to add them."""
    from gitswarm.report.draw import MissingDrawingLibrary, check

    try:
        check()
    except MissingDrawingLibrary as exc:
        typer.echo(f"gitswarm: {exc}", err=True)
        return False
    return True
