"""`gitswarm dashboard RUN`: watch a run (running in another process, or finished)."""

from __future__ import annotations

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
    """
    from gitswarm.memory.repo import Memory

    with user_errors():
        Memory(run)
    from gitswarm.tui.app import Dashboard

    Dashboard(run).run()
