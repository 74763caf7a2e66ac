"""Which backend confines this machine's programs, found once per process by a probe, and
whether programs may run unconfined where none does (the user's explicit choice)."""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field

from gitswarm.sandbox.backends import UNCONFINED, Backend, how_to_fix, order
from gitswarm.sandbox.scratch import chown_tree, scratch_folder
from gitswarm.sandbox.spawn import UIDS, Limits, SandboxError, config, environment, read_result, spawn_and_wait

_UNCONFINED_PERMITTED: list[bool] = []


@dataclass(frozen=True)
class Containment:
    """What this machine gives a program: the backend that works (None: none does) and why
    each one tried does not."""

    backend: Backend | None
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.backend.name if self.backend else UNCONFINED

    @property
    def disk_full(self) -> bool:
        """Every backend failed to write the root's few files: a full disk or a file-size limit,
        not a machine without a sandbox (installing one would not help)."""
        return bool(self.refused) and all(any(m in reason for m in _DISK_FULL) for reason in self.refused.values())

    def problem(self) -> str:
        """Why no program can be confined here, and the fix."""
        if self.disk_full:
            return ("cannot write the sandbox's files: file too large or no space left (a full disk, or a "
                    "file-size limit such as ulimit -f): free some disk space or raise the limit")
        why = "; ".join(f"{name}: {reason}" for name, reason in self.refused.items()) or "no backend is enabled"
        return f"this machine cannot make a sandbox's root ({why}); {how_to_fix()}"


_DISK_FULL = ("File too large", "No space left on device", "Disk quota exceeded")


def permit_unconfined() -> None:
    """Let this process run programs unconfined where no backend works (the user's explicit
    choice, `solve --unconfined`); said once, at a command's start, for the whole process."""
    _UNCONFINED_PERMITTED.append(True)


def in_force() -> str:
    """What programs of this process run under: a backend's name, "unconfined" (permitted),
    or "none" (no backend here, and no program may run)."""
    found = containment()
    return found.name if found.backend or _UNCONFINED_PERMITTED else "none"


def confining() -> Backend | None:
    """The backend programs run under; None (unconfined) only where none works and that was
    permitted; else SandboxError naming the fix."""
    found = containment()
    if found.backend is None and not _UNCONFINED_PERMITTED:
        raise SandboxError(found.problem())
    return found.backend


@functools.cache
def containment() -> Containment:
    """The first backend (in `backends.order()`) that confines a probe here, tried once per process."""
    refused: dict[str, str] = {}
    for backend in order():
        reason = backend.missing() or _probe(backend)
        if reason is None:
            return Containment(backend, refused)
        refused[backend.name] = reason
    return Containment(None, refused)


def _probe(backend: Backend) -> str | None:
    """None if `backend` runs a Python probe in its root, else what went wrong."""
    probe = [sys.executable, "-I", "-S", "-c", "pass"]
    limits = Limits(wall_seconds=20.0)
    with scratch_folder(None) as scratch, UIDS.lease(os.geteuid() == 0) as uid:
        if uid is not None:
            chown_tree(scratch, uid, uid)
        cfg = config(probe, scratch, backend, uid, limits, ())
        outcome = spawn_and_wait(cfg, environment(scratch, {}), None, limits)
    try:
        probed = read_result(outcome, 0.0, backend, uid)
    except SandboxError as exc:
        return str(exc)
    return None if probed.ok else f"a probe exited {probed.exit_code}: {probed.stderr.strip()[-300:]}"
