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

Set-up happens in `launch.py`, a separate process, never in a `preexec_fn`; `scratch.py`
makes, fills and removes the scratch folder.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from gitswarm.errors import EnvironmentFault
from gitswarm.sandbox.backends import HOW_TO_FIX, UNCONFINED, Backend, order
from gitswarm.sandbox.launch import READY
from gitswarm.sandbox.processes import EXEC, Capture, UidPool, kill_everything, own_tasks, read_until
from gitswarm.sandbox.scratch import chown_tree, scratch_folder, write_files
from gitswarm.sandbox.view import view

_MEMORY_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")
_FATAL = {signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS,
          signal.SIGFPE, signal.SIGILL, signal.SIGTERM}
"""Signals whose death a confining tool reports as 128 + N (bwrap), read back as -N."""
@dataclass(frozen=True)
class Limits:
    """Resource bounds for one sandboxed run."""

    wall_seconds: float = 10.0
    """Wall-clock bound; past it the whole process tree is killed and `timed_out` is set."""
    cpu_seconds: int = 10
    """CPU-time bound per process (`RLIMIT_CPU`); exceeding it also sets `timed_out`."""
    memory_bytes: int = 1 << 30
    """Address-space bound per process (`RLIMIT_AS`); allocations beyond it fail."""
    file_bytes: int = 64 << 20
    """Largest file a process may write (`RLIMIT_FSIZE`)."""
    max_processes: int = 64
    """Processes and threads the program may have at once (a fork bomb stops here)."""
    output_bytes: int = 64 << 10
    """Bytes kept of each of stdout and stderr (head and tail; the middle is dropped)."""


@dataclass(frozen=True)
class SandboxResult:
    """What happened in one sandboxed run."""

    exit_code: int
    """The program's exit status; negative for a signal (as `subprocess`)."""
    timed_out: bool
    """The wall-clock or CPU-time limit ended the run."""
    killed_for_memory: bool
    """The program died after failing to get memory within `memory_bytes`."""
    stdout: str
    """Standard output (decoded, head and tail when longer than `output_bytes`)."""
    stderr: str
    """Standard error, bounded as `stdout`."""
    stdout_truncated: bool
    stderr_truncated: bool
    duration_seconds: float
    isolation: str
    """Network isolation in force: "netns" (no network at all) or "env-only" (unconfined)."""
    uid: int | None
    """The uid the program ran as, or None when it ran as the caller."""
    containment: str = UNCONFINED
    """The backend that made the program's root ("bwrap", "namespaces"), or "unconfined"."""

    @property
    def ok(self) -> bool:
        """The program exited with status 0 within its limits."""
        return self.exit_code == 0 and not self.timed_out


class SandboxError(EnvironmentFault):
    """The sandbox itself could not be set up (not a failure of the program)."""


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
        return f"this machine cannot make a sandbox's root ({why}); {HOW_TO_FIX}"


_DISK_FULL = ("File too large", "No space left on device", "Disk quota exceeded")


@dataclass(frozen=True)
class _Outcome:
    code: int
    timed_out: bool
    out: Capture
    err: Capture
    setup_error: str


def run(
    argv: list[str],
    *,
    files: dict[str, bytes] | None = None,
    workdir: Path | None = None,
    limits: Limits = Limits(),
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
    with scratch_folder(workdir) as scratch, _UIDS.lease(os.geteuid() == 0) as uid:
        write_files(scratch, files or {})
        owner = scratch.stat()
        if uid is not None:
            chown_tree(scratch, uid, uid)
        try:
            cfg = _config(argv, scratch, backend, uid, limits, hide, expose, packages)
            started = time.monotonic()
            outcome = _spawn_and_wait(cfg, _environment(scratch, env or {}), stdin, limits)
            return _result(outcome, time.monotonic() - started, backend, uid)
        finally:
            if uid is not None and workdir is not None:
                chown_tree(scratch, owner.st_uid, owner.st_gid)


def _result(outcome: _Outcome, duration: float, backend: Backend | None, uid: int | None) -> SandboxResult:
    code, out, err = outcome.code, outcome.out, outcome.err
    setup = outcome.setup_error
    if setup == READY or (backend is None and not setup):
        setup = ""
    elif backend is not None and backend.name != "namespaces" and not outcome.timed_out:
        setup = setup or f"{backend.name} could not make the root: {err.text()[-500:].strip()}"
    if setup:
        raise SandboxError(setup)
    if backend is not None and code > 128 and code - 128 in _FATAL:
        code = 128 - code
    timed_out = outcome.timed_out or code == -signal.SIGXCPU
    stderr = err.text()
    memory = code != 0 and not timed_out and any(m in stderr for m in _MEMORY_MARKERS)
    return SandboxResult(
        exit_code=code, timed_out=timed_out, killed_for_memory=memory,
        stdout=out.text(), stderr=stderr, stdout_truncated=out.truncated,
        stderr_truncated=err.truncated, duration_seconds=duration,
        isolation="netns" if backend else "env-only", uid=uid,
        containment=backend.name if backend else UNCONFINED,
    )


def _config(argv: list[str], scratch: Path, backend: Backend | None, uid: int | None, limits: Limits,
            hide: tuple[Path, ...], expose: tuple[Path, ...] = (), packages: tuple[str, ...] = ()) -> dict:
    """The set-up instructions for `launch.py`."""
    hidden = [Path(p).resolve() for p in hide]
    if any(scratch.resolve().is_relative_to(h) for h in hidden):
        raise ValueError("the scratch folder lies inside a hidden path")
    if any(Path(p).resolve().is_relative_to(h) for p in expose for h in hidden):
        raise ValueError("an exposed folder lies inside a hidden path")
    nproc = limits.max_processes if uid is not None else own_tasks() + limits.max_processes
    cfg = {"mode": "none", "uid": uid, "cwd": str(scratch), "argv": list(argv), "limits": {
        "RLIMIT_CPU": limits.cpu_seconds, "RLIMIT_AS": limits.memory_bytes,
        "RLIMIT_FSIZE": limits.file_bytes, "RLIMIT_NPROC": nproc, "RLIMIT_CORE": 0,
    }}
    if backend is None:
        return cfg
    root = view(scratch, uid, expose=expose, hide=tuple(hidden), packages=packages,
                private_bytes=max(limits.file_bytes * 4, 16 << 20))
    return {**cfg, **backend.instructions(root, list(argv))}


def _environment(scratch: Path, extra: dict[str, str]) -> dict[str, str]:
    """A minimal environment: nothing inherited, so no keys, tokens or proxies leak in."""
    bindir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch), "TMPDIR": str(scratch),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        **extra,
    }


def _spawn_and_wait(cfg: dict, environ: dict, stdin: bytes | None, limits: Limits) -> _Outcome:
    status_r, status_w = os.pipe()  # the set-up writes here: its failure, or `ready` (exec mode)
    with tempfile.TemporaryFile() as stdin_file:
        stdin_file.write(stdin or b"")
        stdin_file.seek(0)
        argv = [sys.executable, "-I", "-S", str(EXEC), json.dumps({**cfg, "status_fd": status_w})]
        try:
            proc = subprocess.Popen(
                argv, stdin=stdin_file, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=cfg["cwd"], env=environ, start_new_session=True, pass_fds=(status_w,),
            )
        finally:
            os.close(status_w)
    out, err = Capture(limits.output_bytes), Capture(limits.output_bytes)
    assert proc.stdout is not None and proc.stderr is not None  # started with both PIPE
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    _LIVE.add(proc)
    try:
        deadline = time.monotonic() + limits.wall_seconds
        timed_out = not read_until(streams, deadline, exited=proc.pid)
    finally:
        _LIVE.discard(proc)
        kill_everything(proc, cfg["uid"])
        read_until(streams, time.monotonic() + 2.0)  # the rest, now that writers are dead
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        with os.fdopen(status_r, "rb") as status:
            setup_error = status.read().decode(errors="replace")
    return _Outcome(proc.returncode, timed_out, out, err, setup_error)


_UIDS = UidPool()
_UNCONFINED_PERMITTED: list[bool] = []
_LIVE: set[subprocess.Popen] = set()
"""The programs running now, in any thread of this process (for `stop_all`)."""


def stop_all() -> int:
    """Kill every program this process runs in a sandbox now (the run's episodes are being cut
    short): each `run` waiting on one then returns at once, as for a program that died, and
    cleans up as always. Returns how many were running."""
    live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return len(live)


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
    with scratch_folder(None) as scratch, _UIDS.lease(os.geteuid() == 0) as uid:
        if uid is not None:
            chown_tree(scratch, uid, uid)
        cfg = _config(probe, scratch, backend, uid, limits, ())
        outcome = _spawn_and_wait(cfg, _environment(scratch, {}), None, limits)
    try:
        result = _result(outcome, 0.0, backend, uid)
    except SandboxError as exc:
        return str(exc)
    return None if result.ok else f"a probe exited {result.exit_code}: {result.stderr.strip()[-300:]}"
