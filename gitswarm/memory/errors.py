"""Exceptions of the memory; each carries what its caller needs to react."""

from __future__ import annotations


class MemoryError_(Exception):
    """Base of the memory's errors (named so it does not shadow the builtin)."""


class PathRejected(MemoryError_):
    """An agent asked to write a path it may not write; `reason` says why, for the agent."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot write {path!r}: {reason}")
        self.path = path
        self.reason = reason


class NotARun(MemoryError_):
    """A folder is not a gitswarm run repository (or was made by a newer gitswarm)."""


class RunTooNew(NotARun):
    """A run written by a newer gitswarm, in a format this version cannot read: upgrade."""


class Contention(MemoryError_):
    """A ref moved under us or its lock is held; the operation may be retried."""
