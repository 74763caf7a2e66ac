"""What every command shares: exit codes and turning known errors into clear messages."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum

import typer


class Exit(IntEnum):
    """Exit codes scripts can rely on."""

    OK = 0
    FAILED = 1
    """The command ran and failed (a run stopped by an error, a grade below the bar)."""
    BAD_INPUT = 2
    """Bad input: options, problem files, a folder that is not a run. Nothing was changed."""


def fail(message: str, code: Exit = Exit.BAD_INPUT) -> typer.Exit:
    """Print `message` to stderr and return the Exit to raise."""
    typer.echo(f"gitswarm: {message}", err=True)
    return typer.Exit(int(code))


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors that bad input causes into one-paragraph messages, never tracebacks."""
    from gitswarm.engine.runlock import RunBusy
    from gitswarm.memory.errors import NotARun, PathRejected

    try:
        yield
    except (NotARun, PathRejected, RunBusy, FileNotFoundError, FileExistsError, ValueError) as exc:
        raise fail(str(exc)) from None
    except PermissionError as exc:
        raise fail(f"permission denied: {exc.filename or exc}", Exit.FAILED) from None
    except KeyboardInterrupt:
        typer.echo("gitswarm: interrupted", err=True)
        sys.exit(130)
