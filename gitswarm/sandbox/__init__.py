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
- A problem that names a container image runs its programs in containers of that image
  instead (`container.py`, engine found by `engines.py`): `programs_in(image)` makes `run`
  start a fresh container per program, with its scratch folder at the image's workspace;
  an episode's shell keeps one `Container` for the episode.
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

from gitswarm.sandbox import container
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
)
from gitswarm.sandbox.spawn import stop_all as _stop_programs

programs_in = container.programs_in
__all__ = ["Containment", "Limits", "SandboxError", "SandboxResult", "confining", "containment", "in_force",
           "permit_unconfined", "programs_in", "run", "stop_all"]


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
    can make the root here and unconfined runs were not permitted. Within `programs_in(image)`
    the program runs in a fresh container of that image instead, `workdir` (or the scratch
    folder) at its workspace; `hide`, `expose` and `packages` are then moot: the container
    shows the image and that folder only.
    """
    if not argv:
        raise ValueError("argv is empty")
    image = container.current_image()
    if image is not None:
        with scratch_folder(workdir) as scratch:
            write_files(scratch, files or {})
            return container.run_once(image, argv, scratch, limits, env or {}, stdin)
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


def stop_all() -> int:
    """Kill every program this process runs in a sandbox now, and every container it runs (the
    run's episodes are being cut short): each `run` waiting on one then returns at once, as for
    a program that died, and cleans up as always. Returns how many were running."""
    return _stop_programs() + container.stop_all()
