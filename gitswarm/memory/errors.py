"""Exceptions of the memory; each carries what its caller needs to react, and its kind
(gitswarm.errors) says what a command makes of it."""

from __future__ import annotations

from gitswarm.errors import BadInput, RunFault


class MemoryError_(Exception):
    """Base of the memory's errors (named so it does not shadow the builtin)."""


class PathRejected(MemoryError_, BadInput):
    """An agent asked to write a path it may not write; `reason` says why, for the agent."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot write {path!r}: {reason}", where=path)
        self.path = path
        self.reason = reason


class NotARun(MemoryError_, BadInput):
    """A folder is not a gitswarm run repository (or was made by a newer gitswarm)."""


class RunTooNew(NotARun):
    """A run written by a newer gitswarm, in a format this version cannot read: upgrade."""


class Contention(MemoryError_, RunFault):
    """A ref moved under us or its lock is held; the operation may be retried. Past every
    retry it ends the run's command as a run fault: what was committed is kept."""
