"""Retry ref moves: libgit2 never waits on a locked ref, so we back off and try again."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import pygit2

from gitswarm.memory.errors import Contention

T = TypeVar("T")
_TRANSIENT = ("lock", "does not match", "modified", "exists", "changed")


def is_transient(exc: BaseException) -> bool:
    """A lock held by another writer (git itself, gc, pack-refs) or a ref that moved under us."""
    if isinstance(exc, Contention):
        return True
    if isinstance(exc, pygit2.GitError | OSError):
        text = str(exc).lower()
        return any(word in text for word in _TRANSIENT)
    return False


def retry(action: Callable[[], T], *, attempts: int = 200, base: float = 0.0005,
             cap: float = 0.05) -> T:
    """Run `action`, retrying transient git errors with jittered exponential backoff."""
    for attempt in range(attempts):
        try:
            return action()
        except (Contention, pygit2.GitError, OSError) as exc:
            if not is_transient(exc) or attempt == attempts - 1:
                raise
            time.sleep(random.uniform(0, min(cap, base * 2**attempt)))
    raise AssertionError("unreachable")
