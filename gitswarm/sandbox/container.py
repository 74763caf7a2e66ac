"""The container backend: programs of a problem that names an image run in a container of it.

A `Container` is one long-lived container of an image (`podman run -d ... sleep infinity`),
started on first use and killed by `close` (or `sandbox.stop_all`); each program is one
`exec` in it. It gives:

- Deny by default: the container sees the image and the folders it is given (the code tree,
  the reference's folder), nothing else of the host; no network at all (`--network none`);
  no capability, no privilege gained by exec (`no-new-privileges`); the programs run as an
  unprivileged user: the image's own, or `nobody` where the image names root (not root: the
  host's user, so the tree stays theirs).
- Bounds: the container's memory and processes (`--memory`, `--pids-limit`); each program's
  CPU time, address space and file size (`ulimit`, by the `Limits` of its call); its wall
  time, past which every process of the user in the container is killed (`kill -9 -1` as
  that user), as it is after every program ends, so nothing outlives the command.
- A minimal environment: the image's PATH (the reference's folder first), HOME and TMPDIR
  /tmp; nothing of gitswarm's environment (no keys, no proxies).

`run_once` runs one program in a fresh container with its scratch folder at the image's
workspace: how grading and `run_python` use an image (`programs_in` makes `sandbox.run` do so).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitswarm.sandbox.engines import Engine, EngineError, engine
from gitswarm.sandbox.processes import Capture, read_until
from gitswarm.sandbox.scratch import chown_tree
from gitswarm.sandbox.spawn import _FATAL, Limits, SandboxResult

CONTAINMENT = "container"
WORKSPACE = "/workspace"
"""Where an image without a working directory of its own is given its folder."""
REFERENCE_DIR = "/opt/gitswarm/reference"
"""The folder on PATH that holds the reference under its documented name."""
NOBODY = "65534:65534"
LABEL = "gitswarm.sandbox=1"
_WRAP = ('ulimit -c 0; ulimit -H -t {hard} 2>/dev/null; ulimit -S -t {cpu} 2>/dev/null; '
         'ulimit -v {kb} 2>/dev/null; ulimit -f {blocks} 2>/dev/null; "$@"; s=$?; kill -9 -1 2>/dev/null; exit $s')
"""Each program: its limits (CPU time: SIGXCPU at the soft limit, SIGKILL a second later), then
it, then every other process of its user in the container dies."""
_MEMORY_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


@dataclass(frozen=True)
class Image:
    """What gitswarm reads of an image: its id, working directory, user and PATH."""

    name: str
    id: str
    workdir: str
    user: str
    path: str


@functools.cache
def image(name: str) -> Image:
    """The image `name` as this machine's engine has it; EngineError if it is not here."""
    found = engine().cli("image", "inspect", name, timeout=60.0)
    if found.returncode != 0:
        raise EngineError(f"the image {name} is not on this machine: pull it ({engine().name} pull {name}) "
                          "or build it, then start again")
    data = json.loads(found.stdout)[0]
    config = data.get("Config") or {}
    env = dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e)
    workdir = config.get("WorkingDir") or ""
    return Image(name, data["Id"], workdir if workdir not in ("", "/") else WORKSPACE,
                 config.get("User") or "", env.get("PATH", "/usr/local/bin:/usr/bin:/bin"))


class Container:
    """One container of `image` for a series of programs (an episode's), made on first use.

    `mounts` are (host folder, path in the container) pairs, bound read-write unless the path
    is `REFERENCE_DIR`; `reference` (documented name, path in the image) puts a program of the
    image on PATH under that name. Each `exec` holds the container alone.
    """

    def __init__(self, image_name: str, mounts: Sequence[tuple[Path, str]] = (), *,
                 reference: tuple[str, str] | None = None, memory_bytes: int = 8 << 30,
                 processes: int = 1024) -> None:
        self.image_name = image_name
        self.mounts = list(mounts)
        self.reference = reference
        self.memory_bytes, self.processes = memory_bytes, processes
        self.name: str | None = None
        self.uid: int | None = None
        self.gid: int | None = None
        self._user = ""
        self._lock = threading.Lock()

    @property
    def workspace(self) -> str:
        return image(self.image_name).workdir

    def start(self) -> None:
        """Start the container (once); EngineError if it does not start."""
        if self.name is not None:
            return
        eng, facts = engine(), image(self.image_name)
        name = f"gitswarm-{uuid.uuid4().hex[:12]}"
        args = ["run", "-d", "--name", name, "--label", LABEL, "--init", "--network", "none",
                "--hostname", "sandbox", "--cap-drop", "all", "--security-opt", "no-new-privileges",
                "--memory", str(self.memory_bytes), "--pids-limit", str(self.processes), "--user", "0:0",
                "--entrypoint", "", "-w", "/", *self._user_namespace(eng)]
        for host, target in self.mounts:
            args += ["-v", f"{host}:{target}:{'ro' if target == REFERENCE_DIR else 'rw'}"]
        _LIVE.add(self)
        self.name = name
        try:
            eng.must(*args, facts.name, "sleep", "infinity")
            self._user = self._whom(facts)
            ids = eng.must("exec", "--user", self._user, name, "/bin/sh", "-c", "id -u; id -g").split()
            self.uid, self.gid = int(ids[0]), int(ids[1])
            if self.reference is not None:
                named, source = self.reference
                eng.must("exec", "--user", "0:0", name, "/bin/sh", "-c",
                         f"mkdir -p {REFERENCE_DIR} && ln -sf '{source}' '{REFERENCE_DIR}/{named}'")
        except (EngineError, ValueError, IndexError) as exc:
            self.close()
            raise EngineError(f"a container of {facts.name} did not start: {exc}") from None

    def exec(self, argv: list[str], *, cwd: str, limits: Limits, env: dict[str, str] | None = None,
             stdin: bytes | None = None) -> SandboxResult:
        """Run `argv` in the container, in `cwd`, as its user, within `limits`."""
        with self._lock:
            self.start()
            assert self.name is not None
            eng, facts = engine(), image(self.image_name)
            on_path = self.reference is not None or any(t == REFERENCE_DIR for _h, t in self.mounts)
            search = f"{REFERENCE_DIR}:{facts.path}" if on_path else facts.path
            environ = {"PATH": search, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
                       "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
            cpu = max(1, int(limits.cpu_seconds))
            wrap = _WRAP.format(cpu=cpu, hard=cpu + 1, kb=limits.memory_bytes // 1024,
                                blocks=max(1, limits.file_bytes // 512))
            command = [eng.path, "exec", "-i", "--user", self._user, "-w", cwd,
                       *(f"--env={k}={v}" for k, v in environ.items()), self.name,
                       "/bin/sh", "-c", wrap, "gitswarm", *[_in_image(a) for a in argv]]
            return self._run(command, stdin, limits)

    def close(self) -> None:
        """Kill the container and everything in it, and remove it."""
        name, self.name = self.name, None
        _LIVE.discard(self)
        if name is not None:
            eng = engine()
            eng.cli("rm", "-f", *(["-t", "0"] if eng.name == "podman" else []), name, timeout=60.0)

    def _user_namespace(self, eng: Engine) -> list[str]:
        """Not root: the host's user is the container's (podman's keep-id), so the tree stays theirs."""
        return ["--userns=keep-id"] if os.geteuid() != 0 and eng.name == "podman" else []

    def _whom(self, facts: Image) -> str:
        if os.geteuid() != 0:
            return f"{os.getuid()}:{os.getgid()}"
        return facts.user if facts.user.split(":")[0] not in ("", "root", "0") else NOBODY

    def _run(self, command: list[str], stdin: bytes | None, limits: Limits) -> SandboxResult:
        started = time.monotonic()
        with tempfile.TemporaryFile() as stdin_file:
            stdin_file.write(stdin or b"")
            stdin_file.seek(0)
            proc = subprocess.Popen(command, stdin=stdin_file, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True, env=os.environ.copy())
        out, err = Capture(limits.output_bytes), Capture(limits.output_bytes)
        assert proc.stdout is not None and proc.stderr is not None
        streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
        try:
            timed_out = not read_until(streams, started + limits.wall_seconds, exited=proc.pid)
        finally:
            if self.name is not None and proc.poll() is None:
                self._kill_programs()
            read_until(streams, time.monotonic() + 5.0)
            with contextlib.suppress(ProcessLookupError):
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        return _result(proc.returncode, timed_out, out, err, time.monotonic() - started)

    def _kill_programs(self) -> None:
        """Every process of the container's user dies (its programs; the container's own init is root's)."""
        if self.name is not None:
            engine().cli("exec", "--user", self._user, self.name, "/bin/sh", "-c", "kill -9 -1", timeout=30.0)


def _in_image(word: str) -> str:
    """gitswarm's own interpreter, as a caller names it, is the image's `python3` in there."""
    return "python3" if word == sys.executable else word


def _result(code: int, timed_out: bool, out: Capture, err: Capture, seconds: float) -> SandboxResult:
    stderr = err.text()
    if code == 125 and stderr.lstrip().startswith("Error"):
        raise EngineError(f"{engine().name} could not run the program: {stderr.strip()[-500:]}")
    if code > 128 and code - 128 in _FATAL:  # the program died of a signal, as sh reports it
        code = 128 - code
    timed_out = timed_out or code == -signal.SIGXCPU
    memory = code != 0 and not timed_out and any(m in stderr for m in _MEMORY_MARKERS)
    return SandboxResult(exit_code=code, timed_out=timed_out, killed_for_memory=memory, stdout=out.text(),
                         stderr=stderr, stdout_truncated=out.truncated, stderr_truncated=err.truncated,
                         duration_seconds=seconds, isolation="netns", uid=None, containment=CONTAINMENT)


def run_once(image_name: str, argv: list[str], scratch: Path, limits: Limits, env: dict[str, str],
             stdin: bytes | None = None) -> SandboxResult:
    """Run `argv` in a fresh container of `image_name` whose workspace is `scratch` (read-write)."""
    box = Container(image_name, [(scratch.resolve(), image(image_name).workdir)],
                    memory_bytes=max(limits.memory_bytes, 256 << 20), processes=max(limits.max_processes, 64))
    owner = scratch.stat()
    try:
        box.start()
        if os.geteuid() == 0 and box.uid is not None and box.gid is not None:
            chown_tree(scratch, box.uid, box.gid)
        return box.exec(argv, cwd=box.workspace, limits=limits, env=env, stdin=stdin)
    finally:
        box.close()
        if os.geteuid() == 0:
            chown_tree(scratch, owner.st_uid, owner.st_gid)


def file_digest(image_name: str, path: str) -> str:
    """The sha256 of the file `path` of the image, computed in a container of it (the file never
    leaves the image); EngineError if it cannot be read there."""
    key = (image(image_name).id, path)
    if key not in _DIGESTS:
        box = Container(image_name)
        try:
            done = box.exec(["sha256sum", path], cwd="/", limits=Limits(wall_seconds=120.0, cpu_seconds=120))
        finally:
            box.close()
        if not done.ok or not done.stdout.split():
            raise EngineError(f"{path} of the image {image_name} cannot be read there: {done.stderr.strip()[-300:]}")
        _DIGESTS[key] = done.stdout.split()[0]
    return _DIGESTS[key]


_DIGESTS: dict[tuple[str, str], str] = {}
_IMAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("gitswarm_sandbox_image", default=None)


@contextlib.contextmanager
def programs_in(image_name: str | None) -> Iterator[None]:
    """Within this block (and the threads it starts through anyio), `sandbox.run` runs each
    program in a fresh container of `image_name` (None: on the host's sandbox root, as always)."""
    token = _IMAGE.set(image_name)
    try:
        yield
    finally:
        _IMAGE.reset(token)


def current_image() -> str | None:
    """The image `programs_in` set for this context, or None."""
    return _IMAGE.get()


_LIVE: set[Container] = set()
"""The containers this process has started and not closed (for `stop_all`)."""


def stop_all() -> int:
    """Kill every container this process runs now; a program waiting in one returns at once."""
    live = list(_LIVE)
    for box in live:
        box.close()
    return len(live)
