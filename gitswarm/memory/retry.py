"""Retry ref moves: libgit2 never waits on a locked ref, so we back off and try again.

What is transient is decided by libgit2's error, as far as pygit2 (1.21, over libgit2 1.9)
lets us see it:

- `Contention`: our own compare-and-swap lost (the ref moved between our read and our lock).
- `pygit2.AlreadyExistsError` (GIT_EEXISTS): another writer created the ref first.
- GIT_ELOCKED: another writer holds `<ref>.lock` (git, gc, pack-refs, another process).
  pygit2 drops this code. Its C binding turns libgit2's error *class* GIT_ERROR_OS into a
  plain `OSError` with no errno (`references.create`, `compress`); its cffi binding
  (`ReferenceTransaction.lock_ref`, through `pygit2.errors.check_error`) raises a `GitError`
  whose `error_class` is GIT_ERROR_OS. That class also covers a full disk or a folder we
  may not write, so the narrowest reliable signal is libgit2's message for this one case:
  filebuf.c sets "failed to lock file '<path>.lock' for writing" only when the lock file
  exists, and returns GIT_ELOCKED with it; the race where the lock appears between that
  check and the O_EXCL open is "failed to create locked file '<path>.lock': " followed by
  strerror(EEXIST), also GIT_ELOCKED. Both are required to come with the OS class.
- GIT_EMODIFIED: a compare-and-swap inside libgit2 lost (`Reference.set_target` on a
  reference that moved since it was read; `create_commit` onto a tip that moved). pygit2
  raises a bare `GitError` with neither code nor class, so libgit2's two messages for it
  decide (refdb_fs.c "old reference value does not match", commit.c "current tip is not the
  first parent").
- An `OSError` Python raised with errno EAGAIN or EBUSY: a resource briefly held.

Nothing else is: `NotFoundError`/`KeyError` (GIT_ENOTFOUND), `InvalidSpecError`
(GIT_EINVALIDSPEC), a full disk, a folder we may not write, any other `GitError`.
"""

from __future__ import annotations

import errno
import os
import random
import re
import time
from collections.abc import Callable
from typing import TypeVar

import pygit2
from pygit2.ffi import C

from gitswarm.memory.errors import Contention

T = TypeVar("T")

LOCKED = re.compile(r"failed to lock file '.+\.lock' for writing"
                    rf"|failed to create locked file '.+\.lock': {re.escape(os.strerror(errno.EEXIST))}")
"""libgit2's messages that come with GIT_ELOCKED (src/util/filebuf.c, src/util/futils.c)."""
LOOSE_LOCKED = re.compile(r"failed to lock loose reference '.+'")
"""libgit2's message when packing refs meets a ref whose lock another writer holds (refdb_fs.c
`packed_remove_loose` sets it over the lock's own error, and pygit2 keeps no class for it)."""
MODIFIED = ("old reference value does not match", "current tip is not the first parent")
"""libgit2's messages that come with GIT_EMODIFIED (refdb_fs.c, commit.c)."""
BUSY_ERRNO = frozenset({errno.EAGAIN, errno.EBUSY})
OS_CLASS = C.GIT_ERROR_OS
"""libgit2's error class of an operating-system failure (pygit2 has no enum for classes)."""


def is_transient(exc: BaseException) -> bool:
    """A lock held by another writer, or a ref that moved under us: worth another try."""
    if isinstance(exc, Contention | pygit2.AlreadyExistsError):
        return True
    if isinstance(exc, pygit2.GitError):
        return (_locked(exc, getattr(exc, "error_class", None)) or _modified(exc)
                or (type(exc) is pygit2.GitError and LOOSE_LOCKED.fullmatch(str(exc)) is not None))
    if isinstance(exc, OSError):
        return exc.errno in BUSY_ERRNO if exc.errno is not None else _locked(exc, OS_CLASS)
    return False


def _locked(exc: BaseException, error_class: int | None) -> bool:
    """GIT_ELOCKED: the OS class and one of libgit2's two messages for a held lock file."""
    return error_class == OS_CLASS and LOCKED.match(str(exc)) is not None


def _modified(exc: pygit2.GitError) -> bool:
    """GIT_EMODIFIED: a plain GitError (no subclass, no class) with libgit2's message for it."""
    return type(exc) is pygit2.GitError and any(text in str(exc) for text in MODIFIED)


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
