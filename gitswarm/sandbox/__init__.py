"""Run untrusted code (agent programs, hidden tests, computations) in a bounded sandbox.

`run` executes one command in a scratch folder and always returns a `SandboxResult`.
Containment, strongest first, as the platform allows (probed once per process):

- as root: the program runs as a fresh, otherwise unused uid (one per concurrent run).
  `RLIMIT_NPROC` then really caps its processes (root itself ignores that limit), files
  private to other users (the run repository when it is closed, hidden tests, secrets)
  are unreadable, and afterwards every process of that uid is killed atomically
  (`kill -1` sent as that uid), so even a child that left the session dies;
- a private mount namespace: `hide` paths are covered (an unreadable empty tmpfs), /tmp,
  /var/tmp and /dev/shm are fresh and private to the run (nothing persists or passes
  between runs there), and the interpreter is bind-mounted back into view when its home
  is closed to other users;
- a fresh network namespace (only a downed loopback): no network at all. Without one the
  environment merely has no proxies, and the result says so (`isolation="env-only"`);
- without root: a user namespace (as `unshare -rn`) gives the network and mount
  namespaces; processes are capped by `RLIMIT_NPROC` over the caller's own count;
- always: a new session whose whole process group and session are killed on timeout and
  after normal exit; CPU, address-space and file-size limits; a minimal environment with
  no inherited secrets; bounded output capture (head and tail of each stream).

Set-up happens in `launch.py`, a separate process, never in a `preexec_fn`; `scratch.py`
makes, fills and removes the scratch folder.
"""

from __future__ import annotations

import functools
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
from gitswarm.sandbox.processes import EXEC, Capture, UidPool, kill_everything, own_tasks, read_until
from gitswarm.sandbox.scratch import chown_tree, scratch_folder, write_files

_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_MEMORY_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


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
    """Network isolation in force: "netns" (no network at all) or "env-only"."""
    uid: int | None
    """The uid the program ran as, or None when it ran as the caller."""

    @property
    def ok(self) -> bool:
        """The program exited with status 0 within its limits."""
        return self.exit_code == 0 and not self.timed_out


class SandboxError(EnvironmentFault):
    """The sandbox itself could not be set up (not a failure of the program)."""


@dataclass(frozen=True)
class _Policy:
    userns: bool = False
    mountns: bool = False
    netns: bool = False
    drop_uid: bool = False


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
) -> SandboxResult:
    """Run `argv` in a sandbox and return what happened; never leaves a process behind.

    `files` (relative path -> content) are written into the scratch folder first. The
    scratch folder is `workdir` when given (kept afterwards, handed back to its owner),
    else a fresh temporary folder removed afterwards. `env` is added to the minimal
    environment; `hide` lists paths the program must not see (e.g. the run repository);
    `expose` lists folders it must see even under /tmp, which is otherwise private to the
    run (a tool folder put on its PATH).
    """
    if not argv:
        raise ValueError("argv is empty")
    policy = _policy()
    with scratch_folder(workdir) as scratch, _UIDS.lease(policy.drop_uid) as uid:
        write_files(scratch, files or {})
        owner = scratch.stat()
        if uid is not None:
            chown_tree(scratch, uid, uid)
        try:
            cfg = _config(argv, scratch, policy, uid, limits, hide, expose)
            started = time.monotonic()
            outcome = _spawn_and_wait(cfg, _environment(scratch, env or {}), stdin, limits)
            return _result(outcome, time.monotonic() - started, policy, uid)
        finally:
            if uid is not None and workdir is not None:
                chown_tree(scratch, owner.st_uid, owner.st_gid)


def _result(outcome: _Outcome, duration: float, policy: _Policy, uid: int | None) -> SandboxResult:
    if outcome.setup_error:
        raise SandboxError(outcome.setup_error)
    code, out, err = outcome.code, outcome.out, outcome.err
    timed_out = outcome.timed_out or code == -signal.SIGXCPU
    stderr = err.text()
    memory = code != 0 and not timed_out and any(m in stderr for m in _MEMORY_MARKERS)
    return SandboxResult(
        exit_code=code, timed_out=timed_out, killed_for_memory=memory,
        stdout=out.text(), stderr=stderr, stdout_truncated=out.truncated,
        stderr_truncated=err.truncated, duration_seconds=duration,
        isolation="netns" if policy.netns else "env-only", uid=uid,
    )


def _config(argv: list[str], scratch: Path, policy: _Policy, uid: int | None, limits: Limits,
            hide: tuple[Path, ...], expose: tuple[Path, ...] = ()) -> dict:
    """The set-up instructions for `launch.py`."""
    hidden = [str(Path(p).resolve()) for p in hide]
    if hidden and not policy.mountns:
        raise SandboxError("cannot hide paths here: no mount namespace is available")
    if any(scratch.resolve().is_relative_to(h) for h in hidden):
        raise ValueError("the scratch folder lies inside a hidden path")
    nproc = limits.max_processes if uid is not None else own_tasks() + limits.max_processes
    exe = Path(sys.executable).resolve()
    if any(Path(p).resolve().is_relative_to(h) for p in expose for h in hidden):
        raise ValueError("an exposed folder lies inside a hidden path")
    shown = sorted({sys.base_prefix, sys.prefix, str(exe.parent), str(scratch.resolve()),
                    *(str(Path(p).resolve()) for p in expose)})
    return {
        "userns": policy.userns, "mountns": policy.mountns, "netns": policy.netns,
        "uid": uid, "cwd": str(scratch), "argv": list(argv), "hide": hidden, "expose": shown,
        "private": list(_PRIVATE_DIRS), "private_bytes": max(limits.file_bytes * 4, 16 << 20),
        "limits": {
            "RLIMIT_CPU": limits.cpu_seconds, "RLIMIT_AS": limits.memory_bytes,
            "RLIMIT_FSIZE": limits.file_bytes, "RLIMIT_NPROC": nproc, "RLIMIT_CORE": 0,
        },
    }


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
    status_r, status_w = os.pipe()  # the set-up writes here only if it fails before exec
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
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    try:
        deadline = time.monotonic() + limits.wall_seconds
        timed_out = not read_until(streams, deadline, exited=proc.pid)
    finally:
        kill_everything(proc, cfg["uid"])
        read_until(streams, time.monotonic() + 2.0)  # the rest, now that writers are dead
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        with os.fdopen(status_r, "rb") as status:
            setup_error = status.read().decode(errors="replace")
    return _Outcome(proc.returncode, timed_out, out, err, setup_error)


_UIDS = UidPool()


@functools.cache
def _policy() -> _Policy:
    """The strongest containment that works here, found by trying it once per process."""
    if os.geteuid() == 0:
        candidates = [_Policy(mountns=True, netns=True, drop_uid=True),
                      _Policy(mountns=True, drop_uid=True), _Policy(netns=True)]
    else:
        candidates = [_Policy(userns=True, mountns=True, netns=True)]
    for policy in candidates:
        if _works(policy):
            return policy
    return _Policy()


def _works(policy: _Policy) -> bool:
    probe = [sys.executable, "-I", "-S", "-c", "pass"]
    limits = Limits(wall_seconds=20.0)
    with scratch_folder(None) as scratch, _UIDS.lease(policy.drop_uid) as uid:
        if uid is not None:
            chown_tree(scratch, uid, uid)
        cfg = _config(probe, scratch, policy, uid, limits, ())
        outcome = _spawn_and_wait(cfg, _environment(scratch, {}), None, limits)
        return outcome.code == 0 and not outcome.setup_error
