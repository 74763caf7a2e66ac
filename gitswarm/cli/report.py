"""`gitswarm report RUN`: per-problem results, cost, tokens, time and compounding figures."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import Exit, fail, run_folder, user_errors


class Format(StrEnum):
    md = "md"
    json = "json"
    html = "html"


def report(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/imo, or the git remote URL of a run "
                                       "there (read from a temporary copy).", show_default=False)],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="md, json or html (html draws the "
                                        "contribution graphs; needs the `report` extra).")] = Format.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of "
                                                "stdout.")] = None,
) -> None:
    """Report a run: each problem's selected solution, nominations, grade, cost, tokens, time,
    episodes, and how the work compounded (the report defines its figures). Read-only."""
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
        from gitswarm.report.draw import MissingDrawingLibrary

        try:
            text = render.to_html(data, graph)
        except MissingDrawingLibrary as exc:
            raise fail(str(exc), Exit.FAILED) from None
    if output is None:
        typer.echo(text, nl=False)
    else:
        with user_errors():
            output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}")
