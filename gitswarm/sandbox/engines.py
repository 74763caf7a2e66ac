"""The container engine on this machine: podman or docker (the same command line), found once
per process by asking each whether it can run containers here.

`GITSWARM_CONTAINER_ENGINE` names the one to use (`podman`, `docker`, or a path to either);
by default podman, then docker, the first that answers `info` (a docker CLI without its daemon
does not). gitswarm passes the engine its own environment, so the engine's settings apply as
the engine documents them: podman reads `CONTAINERS_CONF` (a `containers.conf`; some machines
need `runtime = "runc"`, `cgroup_manager = "cgroupfs"` and `default_ulimits = []`), docker
`DOCKER_HOST`. The programs in a container get none of it (`container.py`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from gitswarm.sandbox.spawn import SandboxError

ENGINE_ENV = "GITSWARM_CONTAINER_ENGINE"
CANDIDATES = ("podman", "docker")
HOW_TO_INSTALL = ("install podman (apt-get install podman runc; dnf install podman) or docker with its "
                  "daemon running; where podman's defaults do not fit the machine, name a containers.conf "
                  "in CONTAINERS_CONF (docs/containers.md)")


class EngineError(SandboxError):
    """The engine failed at something that is not the program's doing (a container that does
    not start, an image that is not here); the message says what, and what to do."""


@dataclass(frozen=True)
class Engine:
    """One container engine's command line."""

    name: str
    """podman or docker."""
    path: str
    version: str = ""

    def cli(self, *args: str, timeout: float = 120.0, stdin: bytes | None = None) -> subprocess.CompletedProcess:
        """Run `engine args...` and return what it did (never raises for a failed command)."""
        try:
            return subprocess.run([self.path, *args], input=stdin, capture_output=True, timeout=timeout,
                                  env=os.environ.copy())
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(exc.cmd, 124, b"", f"{self.name} took over {timeout:g} s".encode())

    def must(self, *args: str, timeout: float = 120.0) -> str:
        """`cli`, whose stdout is returned; EngineError with its stderr when it fails."""
        done = self.cli(*args, timeout=timeout)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()[-500:]
            raise EngineError(f"{self.name} {args[0]} failed (exit {done.returncode}): {said}")
        return done.stdout.decode(errors="replace")

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}".strip()


@dataclass(frozen=True)
class Found:
    """The engine that works here (None: none does), and why each other one tried does not."""

    engine: Engine | None
    refused: dict[str, str] = field(default_factory=dict)

    def problem(self) -> str:
        """Why no container can run here, and the fix."""
        why = "; ".join(f"{name}: {reason}" for name, reason in self.refused.items()) or "none tried"
        return f"no container engine works on this machine ({why}): {HOW_TO_INSTALL}"


@functools.cache
def found() -> Found:
    """The first engine of `GITSWARM_CONTAINER_ENGINE` (else podman, docker) that answers `info`."""
    given = os.environ.get(ENGINE_ENV, "").strip()
    refused: dict[str, str] = {}
    for wanted in [given] if given else CANDIDATES:
        path = shutil.which(wanted)
        name = os.path.basename(wanted)
        if path is None:
            refused[name] = f"{wanted} is not on PATH"
            continue
        engine = Engine("docker" if "docker" in name else "podman", path)
        done = engine.cli("info", "--format", "{{json .}}", timeout=60.0)
        if done.returncode != 0:
            refused[name] = f"`{name} info` failed: {done.stderr.decode(errors='replace').strip()[-300:]}"
            continue
        version = engine.cli("--version", timeout=30.0).stdout.decode(errors="replace").split()
        return Found(Engine(engine.name, path, version[-1] if version else ""), refused)
    return Found(None, refused)


def engine() -> Engine:
    """The engine programs of an image run under; EngineError naming what to install."""
    here = found()
    if here.engine is None:
        raise EngineError(here.problem())
    return here.engine
