"""Start one program under a backend (or none) and collect what happened: its set-up
instructions for `launch.py`, its minimal environment, its bounded output, its limits, and the
killing of everything it left behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gitswarm.errors import EnvironmentFault
from gitswarm.sandbox.backends import UNCONFINED, Backend
from gitswarm.sandbox.launch import READY
from gitswarm.sandbox.processes import EXEC, Capture, UidPool, kill_everything, own_tasks, read_until
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


DEFAULT_LIMITS = Limits()


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
class Outcome:
    """How one program ended, before it is read as a `SandboxResult`."""

    code: int
    timed_out: bool
    out: Capture
    err: Capture
    setup_error: str


def read_result(outcome: Outcome, duration: float, backend: Backend | None, uid: int | None) -> SandboxResult:
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


def config(argv: list[str], scratch: Path, backend: Backend | None, uid: int | None, limits: Limits,
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


def environment(scratch: Path, extra: dict[str, str]) -> dict[str, str]:
    """A minimal environment: nothing inherited, so no keys, tokens or proxies leak in."""
    bindir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch), "TMPDIR": str(scratch),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        **extra,
    }


def spawn_and_wait(cfg: dict, environ: dict, stdin: bytes | None, limits: Limits) -> Outcome:
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
    return Outcome(proc.returncode, timed_out, out, err, setup_error)


UIDS = UidPool()
"""The fresh uids programs run as when this process is root, one per program at once."""
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
