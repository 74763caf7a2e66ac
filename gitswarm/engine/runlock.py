"""One `gitswarm solve` per run at a time, and the cleanup that makes that safe.

A process killed mid-transaction leaves `<ref>.lock` files behind, and libgit2 (like git)
never takes a lock that exists: the run would stall on its next merge. While we hold the
run lock (an flock the kernel drops when its holder dies), no other gitswarm can be writing,
so lock files left from before are stale and are removed.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from gitswarm.core.runfiles import LOCK_NAME
from gitswarm.errors import BadInput


class RunBusy(BadInput):
    """Another gitswarm process is working on this run: refused before anything was changed."""


@contextmanager
def run_lock(run: Path):
    path = Path(run) / LOCK_NAME
    handle = path.open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            raise RunBusy(f"another gitswarm (pid {owner}) is running on {run}", where=str(run),
                          fix="wait for it to end, or stop it, before starting this one") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


def clear_stale_locks(run: Path, min_age_s: float = 1.0) -> list[Path]:
    """Remove ref lock files left by a dead process (call only while holding the run lock).

    A lock younger than `min_age_s` may belong to a `git gc` someone runs by hand; we wait
    that long for it to go away before calling it stale.
    """
    run = Path(run)
    found = [*run.glob("refs/**/*.lock"), *run.glob("*.lock")]
    found = [p for p in found if p.name != LOCK_NAME]
    removed = []
    for lock in found:
        try:
            age = time.time() - lock.stat().st_mtime
            if age < min_age_s:
                time.sleep(min_age_s - age)
            lock.unlink()
            removed.append(lock)
        except FileNotFoundError:
            continue
    return removed
