"""`gitswarm dashboard RUN`: watch a run (running in another process, or finished)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import user_errors


def dashboard(
    run: Annotated[Path, typer.Argument(help="The run folder, e.g. runs/imo.", show_default=False)],
) -> None:
    """Open the live dashboard of a run: follows its event log and reads its repository.

    Works on a finished run and on one that `gitswarm solve` is still writing in another
    terminal. It never writes to the run. Keys: arrows and enter, g graph, ? help, q quit.
    Without a terminal (a pipe, a file, a script) it prints the run's status instead, as
    `gitswarm status RUN` does, and ends.
    """
    from gitswarm.memory.repo import Memory

    with user_errors():
        Memory(run)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        from gitswarm.cli.status import status

        typer.echo("gitswarm: the dashboard needs a terminal; the run's status instead (`gitswarm status "
                   f"{run}`; `--json` there for scripts):", err=True)
        status(str(run), as_json=False)
        return
    from gitswarm.tui.app import Dashboard

    Dashboard(run).run()
