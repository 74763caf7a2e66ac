"""A real git server on loopback, for tests and benchmarks: `git daemon` with pushes enabled.

`GitDaemon` serves every repository under its base folder at `git://127.0.0.1:<port>/<name>`
on a free port, and can be stopped and started again on the same port (the fault tests
restart it between operations). `daemon_path` finds git's daemon, which Debian ships in
`git` under `git --exec-path`; tests skip, saying so, where it is missing. It ships in the
package, as the fake model server does, so that `scripts/` can use it too.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def daemon_path() -> Path | None:
    """git's daemon program, or None when this machine's git has none."""
    if shutil.which("git") is None:
        return None
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout.strip()
    found = Path(exec_path) / "git-daemon"
    return found if found.is_file() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bare(path: Path) -> Path:
    """A new empty bare repository at `path`."""
    subprocess.run(["git", "init", "--quiet", "--bare", str(path)], check=True)
    return path


class GitDaemon:
    """`git daemon --enable=receive-pack` over `base`, on 127.0.0.1."""

    def __init__(self, program: Path, base: Path) -> None:
        self.program = program
        self.base = base
        self.port = free_port()
        self._proc: subprocess.Popen | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout_s: float = 10.0) -> None:
        """Start serving and return once the port accepts connections."""
        argv = [str(self.program), "--enable=receive-pack", "--export-all", "--reuseaddr",
                "--informative-errors", f"--base-path={self.base}", f"--port={self.port}",
                "--listen=127.0.0.1", str(self.base)]
        # Its own process group, so `stop` also kills the upload-pack and receive-pack
        # processes it forked for open connections, as a server that goes down would.
        self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"git daemon exited with {self._proc.returncode} (port {self.port} taken?)")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"git daemon did not listen on port {self.port} within {timeout_s} s")

    def stop(self) -> None:
        """Kill the daemon and the connections it serves; the port stays ours for `start`."""
        if self._proc is None:
            return
        os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        self._proc = None

    def restart(self) -> None:
        self.stop()
        self.start()
