"""The kinds of error gitswarm raises on purpose; the kind, not the class or the wording,
decides what a command tells its user and the exit code it ends with (`cli.common.describe`).

- `BadInput`: input was checked and refused before anything was changed: an option, a
  config file, a problem set, an experiment spec, a folder that is not a run.
- `EnvironmentFault`: the machine or the outside world failed us: a remote, a model
  provider, a sandbox this host cannot make, a tool that is not installed.
- `RunFault`: something went wrong inside a run after it began (a ref that kept moving
  under us); what was committed is kept and the same command resumes.

Anything else (a plain `ValueError` from deep inside a run included) is a bug, and is
raised as it is. Existing error classes keep their names and data and inherit a kind.
"""

from __future__ import annotations


class GitswarmError(Exception):
    """An error gitswarm raises on purpose, of one of the kinds below: what failed (`what`,
    the message's first part), where (`where`: a path, a URL, a setting; data for callers,
    named in `what` when a reader needs it) and the fix (`fix`, after a semicolon)."""

    def __init__(self, what: str, *, where: str = "", fix: str = "") -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(f"{what}; {fix}" if fix else what)


class BadInput(GitswarmError, ValueError):
    """Input that was validated and refused; nothing was changed.

    It stays a `ValueError` for three reasons: pydantic turns only a `ValueError` (or an
    `AssertionError`) raised in a validator into the `ValidationError` that names the
    setting; click turns a `ValueError` from a typer option's parser into a usage error;
    and the model's tools report a `ValueError` from the memory's checks to the model as a
    refused contribution (engine/episode.py, remote/intake.py)."""


class EnvironmentFault(GitswarmError):
    """The machine or the outside world failed: a remote, a model provider, a disk, a missing
    tool. Trying again later, or after fixing what `fix` says, may succeed."""


class RunFault(GitswarmError):
    """A run that began went wrong inside (e.g. a ref kept moving under us past every retry).
    What was committed is kept; the same command resumes."""
