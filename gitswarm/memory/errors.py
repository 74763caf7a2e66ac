"""Exceptions of the memory; each carries what its caller needs to react, and its family
(gitswarm.errors) says who reads it: a refused contribution goes back to the model that made
it, the others to the user of a command."""

from __future__ import annotations

from gitswarm.errors import BadInput, Refusal, RunFault


class MemoryError_(Exception):
    """Base of the memory's errors (named so it does not shadow the builtin)."""


class ContributionRefused(MemoryError_, Refusal):
    """A contribution the memory's checks refuse before anything is written (`write.validate`):
    a bad name, a path it may not write, a cited commit not in the run, text that is not UTF-8.
    The episode tells the model; the coordinator's intake refuses the pushed episode."""


class PathRejected(ContributionRefused):
    """An agent asked to write a path it may not write; `reason` says why, for the agent."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot write {path!r}: {reason}", where=path)
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[type[PathRejected], tuple[str, str]]:  # pickled whole (memory/writer.py)
        return type(self), (self.path, self.reason)


class NotARun(MemoryError_, BadInput):
    """A folder is not a gitswarm run repository (or was made by a newer gitswarm)."""


class RunTooNew(NotARun):
    """A run written by a newer gitswarm, in a format this version cannot read: upgrade."""


class Contention(MemoryError_, RunFault):
    """A ref moved under us or its lock is held; the operation may be retried. Past every
    retry it ends the run's command as a run fault: what was committed is kept."""


def git_failure(exc: BaseException) -> tuple[str, bool] | None:
    """libgit2's message when `exc` is one of its errors (pygit2's `GitError` is no `OSError`,
    so a full disk or a read-only folder met by libgit2 arrives as one), and whether it is bad
    input (a name git refuses); None for any other error. For the commands' last word
    (`cli.common.describe`), which may not import pygit2 itself."""
    import pygit2

    if not isinstance(exc, pygit2.GitError):
        return None
    return " ".join(str(exc).split()), isinstance(exc, pygit2.InvalidSpecError)
