"""The `shell` tool of a code episode: a bash command in the sandbox, run in the episode's
code tree (`workspace.Workspace`), whose changes then become the episode's staged files.

The sandbox gives no network, a wall-clock, CPU, memory, file-size and process bound, and
kills everything the command started once it ends. Its PATH holds the reference's folder
(reproduce problems), the interpreter's folder (python, with pytest and nothing else of the
environment gitswarm runs in), the system's (cc, make, bash) and, where this machine has
them, Rust's and Go's toolchains (`toolchains`); the command sees nothing else of the host.
HOME and TMPDIR are the run's private /tmp, so caches never land in the code tree.

A problem that names an image runs the episode's commands in one container of it
(`sandbox.container.Container`), started on the first command and killed with the episode:
the code tree at `<workspace>/code`, the image's own toolchains, the reference on PATH.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio

from gitswarm.engine import workspace
from gitswarm.engine.plan import EpisodePlan
from gitswarm.engine.references import References, ReferenceUnavailable
from gitswarm.memory.store import Store
from gitswarm.problems.model import Kind
from gitswarm.resources import render
from gitswarm.sandbox import Limits, SandboxResult, run
from gitswarm.sandbox.container import REFERENCE_DIR, Container, image
from gitswarm.sandbox.scratch import chown_tree

DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 600
OUTPUT_BYTES = 16 << 10
"""Bytes kept of each of stdout and stderr: the head and the tail, the middle dropped."""
PACKAGES = ("pytest",)
"""The Python packages a command's interpreter may import (the standard library besides)."""
SKIPPED_SHOWN = 20
"""Files not staged that one result names (the rest are counted)."""


@dataclass(frozen=True)
class Toolchains:
    """Compilers outside the system folders: folders to put on PATH, folders to show the
    sandbox (their homes may lie in a folder closed to other users), and their settings."""

    path: tuple[Path, ...] = ()
    expose: tuple[Path, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@functools.cache
def toolchains() -> Toolchains:
    """Cargo (through rustup or not) and Go, where this machine has them."""
    path: list[Path] = []
    expose: list[Path] = []
    env: dict[str, str] = {}
    cargo = shutil.which("cargo")
    if cargo:
        path.append(Path(cargo).parent)
        expose.append(Path(cargo).resolve().parent)
        rustup = Path(os.environ.get("RUSTUP_HOME") or Path.home() / ".rustup")
        if rustup.is_dir():
            expose.append(rustup)
            env["RUSTUP_HOME"] = str(rustup)
        env["CARGO_HOME"] = "/tmp/.cargo"
    go = shutil.which("go")
    if go:
        root = Path(go).resolve().parent.parent
        path.append(Path(go).parent)
        expose.append(root)
        env.update({"GOCACHE": "/tmp/.cache/go-build", "GOPATH": "/tmp/go", "GOTOOLCHAIN": "local"})
    return Toolchains(tuple(dict.fromkeys(path)), tuple(dict.fromkeys(expose)), tuple(env.items()))


def limits(timeout: float) -> Limits:
    """Bounds of one command: compilers fork, and Go and Rust reserve much address space."""
    return Limits(wall_seconds=timeout, cpu_seconds=int(timeout), memory_bytes=8 << 30,
                  file_bytes=64 << 20, max_processes=128, output_bytes=OUTPUT_BYTES)


def run_command(command: str, tree: Path, timeout: float, hide: tuple[Path, ...],
                bin_folders: tuple[Path, ...] = ()) -> SandboxResult:
    """Run `command` with bash in `tree`; `bin_folders` come first on PATH (blocking)."""
    tools = toolchains()
    system = [Path(sys.executable).parent, Path("/usr/local/bin"), Path("/usr/bin"), Path("/bin")]
    search = ":".join(str(p) for p in dict.fromkeys([*bin_folders, *system, *tools.path]))
    env = {"PATH": search, "HOME": "/tmp", "TMPDIR": "/tmp", "XDG_CACHE_HOME": "/tmp/.cache",
           "PYTEST_ADDOPTS": "-p no:cacheprovider", **dict(tools.env)}
    expose = tuple(p for p in (*bin_folders, *tools.expose) if p.is_dir())
    return run(["/bin/bash", "-c", command], workdir=tree, limits=limits(timeout), env=env,
               hide=hide, expose=expose, packages=PACKAGES)


def container_for(ep: EpisodePlan, tree: Path, reference: tuple[Path, ...]) -> Container:
    """The episode's container: its tree at `<workspace>/code`, and the reference on PATH (the
    image's own `./executable`, or the host's built one, read-only)."""
    workdir = image(str(ep.image)).workdir
    mounts = [(tree, f"{workdir}/code"), *((folder, REFERENCE_DIR) for folder in reference[:1])]
    named = (str(ep.executable), f"{workdir}/executable") if ep.reference_in_image and ep.executable else None
    return Container(str(ep.image), mounts, reference=named)


def run_in_container(box: Container, command: str, tree: Path, timeout: float) -> SandboxResult:
    """Run `command` with bash in the episode's container, the tree its user's meanwhile (as root)."""
    box.start()
    owner = tree.stat()
    if os.geteuid() == 0 and box.uid is not None and box.gid is not None:
        chown_tree(tree, box.uid, box.gid)
    try:
        return box.exec(["/bin/bash", "-c", command], cwd=f"{box.workspace}/code", limits=limits(timeout),
                        env={"XDG_CACHE_HOME": "/tmp/.cache", "PYTEST_ADDOPTS": "-p no:cacheprovider"})
    finally:
        if os.geteuid() == 0:
            chown_tree(tree, owner.st_uid, owner.st_gid)


@dataclass(frozen=True)
class Ran:
    """One command's outcome: the text for the agent, and the episode's staging after it."""

    text: str
    staged: dict[str, str]
    deleted: set[str]


class Shell:
    """The shell of one episode: its code tree, made on first use from the step's view of main
    and brought forward with it, and the reference on PATH."""

    def __init__(self, store: Store, ep: EpisodePlan, sandbox: anyio.CapacityLimiter,
                 references: References | None, only: str | None = None) -> None:
        self.store, self.memory, self.ep = store, store.memory, ep
        self.only = only
        """`code/<slug>`: the tree holds this codebase alone (a blind review's candidate)."""
        self.sandbox, self.references = sandbox, references
        self.tree: workspace.Workspace | None = None
        self.tree_at: str | None = None
        """The commit of main the tree's baseline holds."""
        self.box: Container | None = None
        """The episode's container (a problem with an image), made by its first command."""

    async def run(self, command: str, timeout: int, staged: dict[str, str], deleted: set[str],
                  hide: tuple[Path, ...], at: str) -> Ran:
        """Run `command` in the tree of main at `at` holding `staged` and `deleted`; SandboxError
        if the sandbox cannot start here."""
        seconds = min(max(timeout, 1), MAX_TIMEOUT)
        tree = await self._tree(at)
        folders, note = await self._reference()
        others = {p: t for p, t in staged.items() if not p.startswith(workspace.PREFIX)}
        limits = self.memory.limits

        def step() -> tuple[SandboxResult, workspace.Scan]:
            tree.sync(staged, deleted)
            if self.ep.image:
                self.box = self.box or container_for(self.ep, tree.root, folders)
                result = run_in_container(self.box, command, tree.root, seconds)
            else:
                result = run_command(command, tree.root, seconds, hide, folders)
            return result, tree.scan(limits, limits.max_files - len(others))

        result, scan = await anyio.to_thread.run_sync(step, limiter=self.sandbox)
        scan = self._kept(scan)
        staged = {**others, **scan.staged}
        text = render("shell_result.md.j2", result=result, timeout=seconds, note=note,
                      skipped=scan.skipped[:SKIPPED_SHOWN], more_skipped=max(0, len(scan.skipped) - SKIPPED_SHOWN),
                      staged=sorted(scan.staged), deleted=sorted(scan.deleted))
        return Ran(text, staged, scan.deleted)

    def _kept(self, scan: workspace.Scan) -> workspace.Scan:
        """`scan` with the changes the episode's plan may not commit (a review's, under the
        codebase it reviews) said as left in the tree, not staged: a review never changes the
        codebase it reviews, and its shell says so rather than promising a commit."""
        if self.ep.may_write(workspace.PREFIX):
            return scan
        left = [workspace.Skipped(path, "left in your tree, not committed: your review commits its reviews/ files "
                                        "alone (scratch work: .scratch/)") for path in sorted(scan.staged)]
        left += [workspace.Skipped(path, "removed from your tree only: the codebase you review stays as it is")
                 for path in sorted(scan.deleted)]
        return workspace.Scan({}, set(), [*left, *scan.skipped])

    async def rebase(self, at: str, staged: dict[str, str], deleted: set[str]) -> tuple[dict[str, str], set[str]]:
        """The staging as changes to main at `at`, where the contribution is made: a tree of an
        older view is brought forward and scanned again; without a tree, the staging as it is."""
        if self.tree is None or self.tree_at == at:
            return staged, deleted
        tree = await self._tree(at)
        others = {p: t for p, t in staged.items() if not p.startswith(workspace.PREFIX)}
        limits = self.memory.limits

        def step() -> workspace.Scan:
            tree.sync(staged, deleted)
            return tree.scan(limits, limits.max_files - len(others))

        scan = await anyio.to_thread.run_sync(step)
        return {**others, **scan.staged}, scan.deleted

    async def codebase_problem(self, staged: dict[str, str], deleted: set[str], at: str) -> str | None:
        """What keeps the staged code from being reproduce candidates on main at `at`, or None."""
        start = set(self.tree.start) if self.tree and self.tree_at == at else set(await self._baseline(at))
        return workspace.codebase_problem(start, staged, deleted)

    async def _tree(self, at: str) -> workspace.Workspace:
        """The code tree, made from main at `at`, or brought forward to it."""
        if self.tree is None:
            self.tree = workspace.Workspace(await self._baseline(at))
        elif self.tree_at != at:
            start = await self._baseline(at)
            await anyio.to_thread.run_sync(self.tree.advance, start)
        self.tree_at = at
        return self.tree

    async def _baseline(self, at: str) -> dict[str, bytes]:
        found = await self.store.run(workspace.baseline, self.memory, self.ep.problem_id, at)
        if self.only is None:
            return found
        return {path: data for path, data in found.items() if path.startswith(self.only + "/")}

    async def _reference(self) -> tuple[tuple[Path, ...], str]:
        """The folder holding the reference executable (reproduce problems), or a note when
        it cannot be had; the reason stays with the operator, as it may quote hidden source."""
        if self.references is None:  # a remote worker: hidden parts never reach it
            missing = "this worker has no reference executable (it holds no hidden part of the problem)"
            return (), missing if self.ep.kind == Kind.REPRODUCE else ""
        try:
            folder = await self.references.folder(self.ep.problem_id)
        except ReferenceUnavailable:
            return (), "the reference executable could not be built on this machine, so it is not on PATH"
        return ((folder,) if folder else ()), ""

    def close(self) -> None:
        """Kill the episode's container, and remove the code tree from disk."""
        if self.box is not None:
            self.box.close()
            self.box = None
        if self.tree is not None:
            self.tree.close()
            self.tree = None
