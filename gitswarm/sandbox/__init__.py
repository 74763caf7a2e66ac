"""Run untrusted code (agent programs, hidden tests, computations) in a bounded sandbox.

`run` executes one command in a scratch folder and always returns a `SandboxResult`.

- Deny by default: the program sees a root made for it (`view.py`): the system's runtime
  read-only, the interpreter with its standard library and only the Python packages the
  caller declares, the toolchains and folders it is given, its scratch folder read-write,
  fresh /tmp, /dev and /proc. Nothing else of the host exists for it.
- A backend builds that root (`backends.py`): bubblewrap where it is on PATH, else the
  kernel's namespaces driven by `launch.py`; both give new mount, pid, network (no network at
  all), IPC and UTS namespaces. Where neither works, `run` raises `SandboxError` naming what
  to install, unless the process was told programs may run unconfined (`permit_unconfined`):
  then they run with the limits and uid below only, and the result says `unconfined`.
- As root: the program runs as a fresh, otherwise unused uid (one per concurrent run).
  `RLIMIT_NPROC` then really caps its processes, and afterwards every process of that uid
  is killed atomically (`kill -1` sent as that uid), so even a child that left the session dies.
- Always: a new session whose whole process group and session are killed on timeout and
  after normal exit; CPU, address-space and file-size limits; a minimal environment with
  no inherited secrets; bounded output capture (head and tail of each stream).

Set-up happens in `launch.py`, a separate process, never in a `preexec_fn`; `spawn.py` starts
it and collects the result, `confine.py` finds the backend once per process, `scratch.py`
makes, fills and removes the scratch folder.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gitswarm.sandbox.confine import Containment, confining, containment, in_force, permit_unconfined
from gitswarm.sandbox.scratch import chown_tree, scratch_folder, write_files
from gitswarm.sandbox.spawn import (
    DEFAULT_LIMITS,
    UIDS,
    Limits,
    SandboxError,
    SandboxResult,
    config,
    environment,
    read_result,
    spawn_and_wait,
    stop_all,
)

__all__ = ["Containment", "Limits", "SandboxError", "SandboxResult", "confining", "containment", "in_force",
           "permit_unconfined", "run", "stop_all"]


def run(
    argv: list[str],
    *,
    files: dict[str, bytes] | None = None,
    workdir: Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    hide: tuple[Path, ...] = (),
    expose: tuple[Path, ...] = (),
    packages: tuple[str, ...] = (),
) -> SandboxResult:
    """Run `argv` in a sandbox and return what happened; never leaves a process behind.

    `files` (relative path -> content) are written into the scratch folder first. The
    scratch folder is `workdir` when given (kept afterwards, handed back to its owner),
    else a fresh temporary folder removed afterwards. `env` is added to the minimal
    environment; `expose` lists folders the program is shown read-only (a toolchain, a
    tool folder put on its PATH); `packages` the Python distributions its interpreter may
    import (with what they require; none: the standard library only); `hide` lists paths it
    must not see even where they lie inside something shown. SandboxError if no backend
    can make the root here and unconfined runs were not permitted.
    """
    if not argv:
        raise ValueError("argv is empty")
    backend = confining()
    with scratch_folder(workdir) as scratch, UIDS.lease(os.geteuid() == 0) as uid:
        write_files(scratch, files or {})
        owner = scratch.stat()
        if uid is not None:
            chown_tree(scratch, uid, uid)
        try:
            cfg = config(argv, scratch, backend, uid, limits, hide, expose, packages)
            started = time.monotonic()
            outcome = spawn_and_wait(cfg, environment(scratch, env or {}), stdin, limits)
            return read_result(outcome, time.monotonic() - started, backend, uid)
        finally:
            if uid is not None and workdir is not None:
                chown_tree(scratch, owner.st_uid, owner.st_gid)
