"""The `gitswarm` app. Commands import their heavy modules inside, so `--help` stays fast."""

from __future__ import annotations

from typing import Annotated

import typer

from gitswarm import __version__
from gitswarm.cli import problems, sandbox
from gitswarm.cli.common import Group
from gitswarm.cli.dashboard import dashboard
from gitswarm.cli.demo import demo
from gitswarm.cli.doctor import doctor
from gitswarm.cli.experiment import experiment
from gitswarm.cli.export import export
from gitswarm.cli.grade import grade
from gitswarm.cli.log import log
from gitswarm.cli.note import note
from gitswarm.cli.replay import replay
from gitswarm.cli.report import report
from gitswarm.cli.review import review
from gitswarm.cli.show import show
from gitswarm.cli.solve import solve
from gitswarm.cli.status import status
from gitswarm.cli.worker import worker

app = typer.Typer(
    name="gitswarm",
    help="Run a swarm of LLM agents on hard problems; their only shared memory is a git "
    "repository you can read with plain `git log`.\n\n"
    "Exit codes: 0 success, 1 the command failed, 2 bad input (nothing changed), 130 stopped "
    "by Ctrl-C.",
    cls=Group,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(problems.app, name="problems")
app.add_typer(sandbox.app, name="sandbox")
app.command()(solve)
app.command()(demo)
app.command()(status)
app.command()(log)
app.command()(show)
app.command()(grade)
app.command()(dashboard)
app.command()(report)
app.command()(doctor)
app.command()(worker)
app.command()(experiment)
app.command()(replay)
app.command()(export)
app.command()(note)
app.command()(review)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gitswarm {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """gitswarm: compound reasoning by a swarm of agents sharing a git repository."""
