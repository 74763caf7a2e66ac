"""What every command shares: exit codes and turning known errors into clear messages."""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from typing import Any, Literal

import typer
from typer.core import TyperCommand, TyperGroup

from gitswarm.core.stops import StopReason
from gitswarm.errors import BadInput, EnvironmentFault, GitswarmError, RunFault

try:  # newer typer vendors its own click
    from typer._click import exceptions as clicks
except ImportError:  # pragma: no cover - typer that uses click itself
    from click import exceptions as clicks  # type: ignore[no-redef]  # one of the two imports runs: not a redefinition


class Exit(IntEnum):
    """Exit codes scripts can rely on (README.md, "Exit codes")."""

    OK = 0
    FAILED = 1
    """The command ran and failed (a run stopped by an error, a grade below the bar, a disk
    that filled up, a run folder it may not write; `errors.EnvironmentFault`, `errors.RunFault`)."""
    BAD_INPUT = 2
    """Bad input (`errors.BadInput`): options, problem files, a folder that is not a run.
    Nothing was changed."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C; running the same command again resumes."""


STOP_EXIT: dict[StopReason, Exit] = {
    StopReason.BUDGET: Exit.OK,
    StopReason.EPISODE_CAP: Exit.OK,
    StopReason.SETTLED: Exit.OK,
    StopReason.TOKEN_CAP: Exit.OK,
    StopReason.USD_CAP: Exit.OK,
    StopReason.TIME_LIMIT: Exit.OK,
    StopReason.NO_PROGRESS: Exit.FAILED,
    StopReason.PROVIDER_FAILING: Exit.FAILED,
    StopReason.ENGINE_ERRORS: Exit.FAILED,
    StopReason.MODEL_FATAL: Exit.FAILED,
    StopReason.REMOTE_MOVED: Exit.FAILED,
    StopReason.NO_WORKERS: Exit.FAILED,
    StopReason.USER: Exit.INTERRUPTED,
}
"""The exit code of `solve` for each way a run can end: the one table (README.md, "Exit codes")."""

@contextmanager
def run_folder(run: str) -> Iterator[Path]:
    """The run folder a read-only command reads: `run` itself, or for a git remote URL a
    temporary mirror of the run there (`remote.snapshot.copied`)."""
    from gitswarm.remote import urls

    if not urls.is_remote(run):
        yield Path(run)
        return
    from gitswarm.remote.snapshot import copied

    with copied(run) as folder:
        yield folder


Effort = Literal["low", "medium", "high"]
"""gitswarm.models.config.ReasoningEffort, spelt out so `--help` does not import the model client."""
ToolProtocol = Literal["auto", "native", "text"]
"""gitswarm.models.config.ToolProtocol, spelt out for the same reason."""
Isolation = Literal["shared", "independent", "best-of-n"]
"""gitswarm.engine.config.Isolation, spelt out for the same reason."""
Reviews = Literal["open", "assigned", "blind"]
"""gitswarm.engine.config.Reviews, spelt out for the same reason."""
CompactBy = Literal["model", "digest"]
"""gitswarm.engine.config.CompactBy, spelt out for the same reason."""

NO_SPACE = {errno.ENOSPC: "No space left on device", errno.EFBIG: "File too large",
            errno.EDQUOT: "Disk quota exceeded"}
NO_WRITE = {errno.EACCES: "Permission denied", errno.EPERM: "Operation not permitted",
            errno.EROFS: "Read-only file system"}


def fail(message: str, code: Exit = Exit.BAD_INPUT) -> typer.Exit:
    """Print `message` to stderr and return the Exit to raise."""
    typer.echo(f"gitswarm: {message}", err=True)
    return typer.Exit(int(code))


class PanelCommand(TyperCommand):
    """A command whose plain `--help` groups its options under their `rich_help_panel`, in the
    order the panels first appear (typer draws panels only in its rich mode, which the app
    leaves off so help reads the same in a pipe)."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        panels: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = "Arguments" if param.param_type_name == "argument" else "Options"
            panels.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(record)
        for title in sorted(panels, key=lambda t: t != "Arguments"):
            with formatter.section(title):
                formatter.write_dl(panels[title])


class Group(TyperGroup):
    """The app's group: usage errors (a bad option, a missing argument) are one `gitswarm:`
    line on stderr with exit code 2, like every other bad input. Its commands list their
    options by panel (PanelCommand)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            if type(command) is TyperCommand:  # typer builds them; the subclass only formats help
                command.__class__ = PanelCommand

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode,
                               windows_expand_args=windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args=windows_expand_args,
                                **extra)
        except clicks.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except clicks.ClickException as exc:
            typer.echo(f"gitswarm: {usage_message(exc)}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("gitswarm: aborted", err=True)
            sys.exit(int(Exit.FAILED))
        sys.exit(code if isinstance(code, int) else int(Exit.OK))


def usage_message(exc: clicks.ClickException) -> str:
    """Click's error as one line, ending with where the options are described."""
    message = " ".join(exc.format_message().split()).replace("Value error, ", "").rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    return f"{message}; `{ctx.command_path} --help` lists what it accepts"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors of a kind (gitswarm.errors), pydantic's settings errors and a full or
    read-only disk into one-paragraph messages, never tracebacks. Anything else (a plain
    `ValueError` included) is a bug and is raised as it is."""
    try:
        yield
    except KeyboardInterrupt:
        typer.echo("gitswarm: interrupted; run the same command again to resume", err=True)
        sys.exit(int(Exit.INTERRUPTED))
    except Exception as exc:
        known = describe(exc)
        if known is None:
            raise
        message, code = known
        raise fail(message, code) from None


KIND_EXIT: dict[type[GitswarmError], Exit] = {BadInput: Exit.BAD_INPUT, EnvironmentFault: Exit.FAILED,
                                              RunFault: Exit.FAILED}
"""The exit code of each kind of error (README.md, "Exit codes")."""
RESUME = "what was committed is kept: run the same command again to resume"
"""The fix a run fault that names none gets."""


def describe(exc: BaseException) -> tuple[str, Exit] | None:
    """The message and exit code for an error of a kind, a bad setting or path, or a disk
    that refuses writes; else None.

    An exception group (from a task group) is described by its first error when every error
    in it is a known one: a full disk fails all the writers at once."""
    if isinstance(exc, BaseExceptionGroup):
        found = [describe(e) for e in exc.exceptions]
        return found[0] if found and all(found) else None
    return _by_kind(exc) or _input_error(exc) or _os_error(exc) or _git_error(exc)


def _by_kind(exc: BaseException) -> tuple[str, Exit] | None:
    """An error of a kind: its own message (a run fault's ends with how to resume)."""
    for kind, code in KIND_EXIT.items():
        if isinstance(exc, kind):
            text = " ".join(str(exc).split())
            return (f"{text}; {RESUME}" if isinstance(exc, RunFault) and not exc.fix else text), code
    return None


def _input_error(exc: BaseException) -> tuple[str, Exit] | None:
    """Bad settings (pydantic's report), a path that is not there or is in the way: refused
    before anything was changed."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return _settings_message(exc), Exit.BAD_INPUT
    if isinstance(exc, FileNotFoundError | FileExistsError | NotADirectoryError | IsADirectoryError):
        text = " ".join(str(exc).split())
        if isinstance(exc, OSError) and exc.filename and exc.strerror:
            text = f"{exc.filename}: {exc.strerror.lower()}; check the path and run the command again"
        return text, Exit.BAD_INPUT
    return None


def _settings_message(exc) -> str:
    """pydantic's multi-line report as one sentence per bad setting."""
    parts = []
    for error in exc.errors():
        if not error["loc"]:  # a rule over several settings: its message says which
            parts.append(str(error["msg"]).removeprefix("Value error, "))
            continue
        where = ".".join(str(x) for x in error["loc"])
        value = f" (got {error['input']!r})" if "input" in error and not isinstance(error["input"], dict) else ""
        parts.append(f"{where}: {error['msg']}{value}")
    return ("invalid settings: " + "; ".join(parts) + ". Fix it on the command line, in the config file "
            "(gitswarm.toml or $GITSWARM_CONFIG) or in the set's set.toml [defaults]")


def _os_error(exc: BaseException) -> tuple[str, Exit] | None:
    """A full disk, a file-size limit, or a folder gitswarm may not write. libgit2 reports them
    as an OSError with only a message, so the message is matched too."""
    if not isinstance(exc, OSError):
        return None
    text = " ".join(str(exc).split())
    detail = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else text
    return _refused_write(text, detail, exc.errno)


def _refused_write(text: str, detail: str, code: int | None = None) -> tuple[str, Exit] | None:
    """A write the disk refused (full, or a path we may not write), by errno or by message."""
    if code in NO_SPACE or any(reason in text for reason in NO_SPACE.values()):
        return (f"cannot write ({detail}): free some disk space (or raise the file-size limit) and run "
                "the same command again; what was committed is kept"), Exit.FAILED
    if code in NO_WRITE or any(reason in text for reason in NO_WRITE.values()):
        return (f"not allowed ({detail}): give yourself access to that path (a run folder must be "
                "writable for solve and grade) and run the same command again"), Exit.FAILED
    return None


def _git_error(exc: BaseException) -> tuple[str, Exit] | None:
    """An error libgit2 raised in the run's repository: a refused write as the disk's own (a
    read-only folder, a full disk), a name git refuses as bad input, anything else as a
    failure of the repository, with what to check."""
    if type(exc).__module__.split(".")[0] not in ("pygit2", "_pygit2"):
        return None  # not libgit2's: spares loading pygit2 to ask
    from gitswarm.memory.errors import git_failure

    found = git_failure(exc)
    if found is None:
        return None
    text, bad_name = found
    if bad_name:
        return f"git refuses a name ({text}); check the names given and run the command again", Exit.BAD_INPUT
    return _refused_write(text, text) or (
        f"git failed in the run's repository ({text}); check that the run folder is whole and writable "
        "(`git -C RUN fsck`) and run the same command again; what was committed is kept", Exit.FAILED)
