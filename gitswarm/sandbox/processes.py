"""Process plumbing for `gitswarm.sandbox`: bounded output capture, reaping, sandbox uids."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

EXEC = Path(__file__).with_name("launch.py")


class Capture:
    """Keeps the first and last `limit // 2` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        self.head += chunk[: max(room, 0)]
        self.tail += chunk[max(room, 0) :]
        del self.tail[: max(len(self.tail) - self.half, 0)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        if not self.truncated:
            return (self.head + self.tail).decode(errors="replace")
        dropped = self.total - len(self.head) - len(self.tail)
        marker = f"\n[... {dropped} bytes dropped ...]\n".encode()
        return (self.head + marker + self.tail).decode(errors="replace")


def read_until(streams: dict[int, Capture], deadline: float, exited: int | None = None) -> bool:
    """Feed output into its capture until EOF on all streams, or until process `exited`
    has exited (left unreaped, so its ids cannot be reused yet); False at the deadline."""
    pidfd = _pidfd(exited)
    with selectors.DefaultSelector() as sel:
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ)
        try:
            while sel.get_map() and not (exited and _exited(exited)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                poll = remaining if pidfd is not None or exited is None else 0.02
                for key, _ in sel.select(min(remaining, poll)):
                    if key.fd == pidfd:
                        return True
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        streams[key.fd].feed(chunk)
                    else:
                        sel.unregister(key.fd)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    while exited and not _exited(exited):  # both streams closed early; wait for the exit
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _pidfd(pid: int | None) -> int | None:
    """A descriptor that becomes readable when `pid` exits (Linux 5.3+), else None."""
    if pid is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _exited(pid: int) -> bool:
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def kill_everything(proc: subprocess.Popen, uid: int | None) -> None:
    """Kill the program's group, its session, and (as root) every process of its uid."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        procs = _processes()
        stray = [pid for pid, info in procs if info.session == proc.pid and pid != proc.pid]
        owned = [pid for pid, info in procs if uid in info.uids]
        if not stray and not owned:
            return
        if owned:  # may have left the session; `kill -1` as that uid reaches them all
            cfg = json.dumps({"kill_all_as": uid})
            subprocess.run([sys.executable, "-I", "-S", str(EXEC), cfg], check=False)
        for pid in stray:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


@dataclass(frozen=True)
class _ProcInfo:
    session: int
    uids: frozenset[int]


def _processes() -> list[tuple[int, _ProcInfo]]:
    """Live (non-zombie) processes from /proc with their session id and uids."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "status").read_text()
            lines = dict(line.split(":", 1) for line in text.splitlines())
        except (OSError, ValueError):
            continue
        if lines.get("State", "Z").split()[0] in "ZX" or "NSsid" not in lines:
            continue
        uids = frozenset(int(u) for u in lines["Uid"].split())
        found.append((int(entry.name), _ProcInfo(int(lines["NSsid"].split()[-1]), uids)))
    return found


def own_tasks() -> int:
    """Tasks (processes and threads) of the caller's real uid, which RLIMIT_NPROC counts."""
    me = os.getuid()
    total = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError):
                if entry.stat().st_uid == me:
                    total += len(os.listdir(Path(entry.path, "task")))
    return total


class UidPool:
    """Hands out sandbox uids unique among this machine's concurrent runs.

    A uid is 2**30 + (pid << 8) + slot: no account uses that range, the caller's pid keeps
    processes apart, the slot keeps this process's concurrent runs apart. Slots are taken in
    turn, not lowest first: a run's last processes (zombies the host's init has not reaped
    yet) still count against `RLIMIT_NPROC` of their uid, and must not count against the next
    run's; and runs that happen one after another get distinct uids as well.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[int] = set()
        self._next = 0

    @contextmanager
    def lease(self, wanted: bool) -> Iterator[int | None]:
        if not wanted:
            yield None
            return
        uid = self._take()
        try:
            yield uid
        finally:
            with self._lock:
                self._busy.discard(uid)

    def _take(self) -> int:
        with self._lock:
            for turn in range(256):
                slot = (self._next + turn) % 256
                uid = (1 << 30) + (os.getpid() << 8) + slot
                if uid not in self._busy:
                    self._busy.add(uid)
                    self._next = slot + 1
                    return uid
        raise RuntimeError("more than 256 concurrent sandboxes in one process")
