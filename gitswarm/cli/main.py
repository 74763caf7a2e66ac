"""The `gitswarm` app. A command's module is imported when it runs (`cli.lazy`), and imports its
heavy modules inside, so `--help` and `status` stay fast."""

from __future__ import annotations

from typing import Annotated, ClassVar

import typer

from gitswarm import __version__
from gitswarm.cli.lazy import LazyGroup


class Gitswarm(LazyGroup):
    """The app's commands, each imported when it runs (or `--help` lists it), in `--help`'s order."""

    lazy: ClassVar[dict[str, str]] = {**{name: f"gitswarm.cli.{name}:{name}" for name in (
        "solve", "demo", "status", "log", "show", "grade", "dashboard", "report", "doctor", "worker", "experiment",
        "replay", "export", "note", "review")},
        "problems": "gitswarm.cli.problems:app", "sandbox": "gitswarm.cli.sandbox:app"}


app = typer.Typer(
    name="gitswarm",
    help="Run a swarm of LLM agents on hard problems; their only shared memory is a git "
    "repository you can read with plain `git log`.\n\n"
    "Exit codes: 0 success, 1 the command failed, 2 bad input (nothing changed), 130 stopped "
    "by Ctrl-C.",
    cls=Gitswarm,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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
