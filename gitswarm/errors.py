"""The errors gitswarm raises on purpose, by audience: who reads the error decides its family,
and the family, not the class or the wording, decides what becomes of it.

For the user of a command (`cli.common.describe` turns them into a message and an exit code):

- `BadInput`: input was checked and refused before anything was changed: an option, a
  config file, a problem set, an experiment spec, a folder that is not a run.
- `EnvironmentFault`: the machine or the outside world failed us: a remote, a model
  provider, a sandbox this host cannot make, a tool that is not installed.
- `RunFault`: something went wrong inside a run after it began (a ref that kept moving
  under us); what was committed is kept and the same command resumes.

For the model: `Refusal`, a tool call or a contribution the checks refused (the tools'
`ToolError`, the memory's `ContributionRefused`). An episode turns exactly this family into
the answer the model reads (`engine/episode.py`); the coordinator's intake refuses a pushed
episode the memory's checks refuse (`remote/intake.py`). It never reaches a command.

A control signal is no error of these families. A cap reached is a return value
(`engine.kernel.caps_check` returns the `Stop` it calls for). The claims protocol's outcomes
(`ClaimHeld`, `ClaimLost`, `ClaimPruned`: an atomic push refused whole, nothing written) stay
exceptions of their own, caught by name where a claim is taken, renewed or closed.

Anything else, a plain `ValueError` from deep inside a run included, is a bug: an episode
ends as an engine failure, a command raises it as it is. Existing error classes keep their
names and data and inherit a family.
"""

from __future__ import annotations


class GitswarmError(Exception):
    """An error gitswarm raises on purpose, of one of the families below: what failed (`what`,
    the message's first part), where (`where`: a path, a URL, a setting; data for callers,
    named in `what` when a reader needs it) and the fix (`fix`, after a semicolon)."""

    def __init__(self, what: str, *, where: str = "", fix: str = "") -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(f"{what}; {fix}" if fix else what)


class BadInput(GitswarmError):
    """Input that was validated and refused; nothing was changed.

    Not a `ValueError`, so that no bug's `ValueError` is read as bad input. At pydantic's
    boundary a validator raises a plain `ValueError` (pydantic makes only that, or an
    `AssertionError`, the `ValidationError` that names the setting); a typer option's parser
    would raise `typer.BadParameter`. A model's refused contribution is a `Refusal`."""


class EnvironmentFault(GitswarmError):
    """The machine or the outside world failed: a remote, a model provider, a disk, a missing
    tool. Trying again later, or after fixing what `fix` says, may succeed."""


class RunFault(GitswarmError):
    """A run that began went wrong inside (e.g. a ref kept moving under us past every retry).
    What was committed is kept; the same command resumes."""


class Refusal(GitswarmError):
    """A model's tool call or contribution that the checks refused: its message goes back to
    the model (or, for a pushed episode, into the coordinator's refusal), which may fix it.
    No command describes one: one that reaches a command is a bug."""
