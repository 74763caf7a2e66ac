"""The reference executables of a run's reproduce problems, as code workers' shells run them.

Each is built once per process by `referee.builds.reference_executable` (in the sandbox, from
the hidden source, in a folder removed right after) and placed alone in a folder of its own
under a folder of this run's, outside the run repository and the problem set. The file is
execute-only (mode 0111): a sandboxed program can run it but not read it. As root the
sandbox runs programs as a fresh uid, which is not the file's owner, so it can neither read
nor `chmod` it; the file is also setgid to `REFERENCE_GID`, so running it is a secure
execution (the dynamic loader ignores `LD_PRELOAD` and friends, and the process cannot be
traced or dumped). Without root the program runs as the file's owner, who may change its
mode: the reference is then runnable, but not guaranteed unreadable.

A remote worker holds no hidden part of a problem: it builds references only from a set its
user gives it (`gitswarm worker --references DIR`, the set the coordinator runs), all of them
as it starts (`built_from`), so a set that cannot give them is refused before any episode.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio

from gitswarm.errors import BadInput
from gitswarm.problems.model import Kind, ProblemSet
from gitswarm.sandbox.copies import copies

REFERENCE_GID = (1 << 30) - 1
"""Group of the placed references: below the sandbox uids' range, used by no account."""


class ReferenceUnavailable(Exception):
    """The problem's reference could not be built or placed; `reason` is for the operator
    (it may quote the hidden source, so it never goes to an agent)."""

    def __init__(self, problem: str, reason: str) -> None:
        super().__init__(f"the reference of {problem} is unavailable: {reason}")
        self.problem = problem
        self.reason = reason


class ReferencesRefused(BadInput):
    """A worker's `--references` set cannot give the reference of a reproduce problem of its
    run: `problem` (None when the set itself is unusable) and `reason` say which and why."""

    def __init__(self, folder: Path, problem: str | None, reason: str, wanted: list[str]) -> None:
        super().__init__(f"--references {folder}: {reason}. Give the problem set the run's coordinator runs (it "
                         f"holds the run's reproduce problems {', '.join(wanted)}), or leave --references out and "
                         "this worker runs no reproduce problem")
        self.folder, self.problem, self.reason = folder, problem, reason


class References:
    """Reference executables ready to put on a shell's PATH, under `root`: the given folder,
    or one made in the temporary folder when the first is placed and removed by `close` (so a
    run that never needs one leaves nothing behind, even when it is killed)."""

    def __init__(self, problems: ProblemSet, limiter: anyio.CapacityLimiter, root: Path | None = None) -> None:
        self.problems = problems
        self.limiter = limiter
        self.root = root
        self._made: Path | None = None
        self._lock = anyio.Lock()
        self._placed: dict[str, Path] = {}
        self._copies: dict[str, tuple[Path, ...]] = {}

    def close(self) -> None:
        """Remove the folder this object made, with every reference placed in it."""
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)
            self._made = self.root = None
            self._placed.clear()

    async def folder(self, problem_id: str) -> Path | None:
        """The folder holding the problem's reference under its documented name, or None for a
        problem without one; ReferenceUnavailable if it cannot be built."""
        problem = self.problems.get(problem_id)
        if problem is None or problem.kind is not Kind.REPRODUCE or not problem.executable \
                or problem.reference_in_image:  # it stays in its image: the shell's container runs it there
            return None
        async with self._lock:
            if problem_id not in self._placed:
                self._placed[problem_id] = await anyio.to_thread.run_sync(
                    self._place, problem_id, limiter=self.limiter)
        return self._placed[problem_id]

    async def copies(self, problem_id: str) -> tuple[Path, ...]:
        """Where the machine holds other copies of the problem's reference (`sandbox.copies`:
        a program under its name on PATH, the file it was imported from, a system file with its
        content), for a program's root to cover; none for a problem without a reference, or one
        whose reference cannot be built (then nothing is placed either)."""
        try:
            await self.folder(problem_id)
        except ReferenceUnavailable:
            return ()
        return self._copies.get(problem_id, ())

    def executable(self, problem_id: str) -> str | None:
        """The documented name of the problem's reference, or None for a problem without one."""
        found = next((p for p in self.problems.problems if p.id == problem_id), None)
        return found.executable if found is not None and found.kind is Kind.REPRODUCE else None

    def _place(self, problem_id: str) -> Path:
        from gitswarm.referee.builds import ReproduceGradingError, reference_executable
        from gitswarm.sandbox import SandboxError

        problem = self.problems.get(problem_id)
        try:
            with tempfile.TemporaryDirectory(prefix="gitswarm-reference-build-") as scratch:
                data = reference_executable(problem, Path(scratch) / "reference")
        except (ReproduceGradingError, SandboxError, OSError) as exc:
            raise ReferenceUnavailable(problem_id, str(exc)) from None
        if self.root is None:
            self.root = self._made = Path(tempfile.mkdtemp(prefix="gitswarm-references-"))
        self._copies[problem_id] = copies(data, problem.executable, problem.origin)
        return place(self.root / problem_id, str(problem.executable), data)


async def built_from(folder: Path, wanted: dict[str, str], limiter: anyio.CapacityLimiter) -> References:
    """The references of the reproduce problems `wanted` (id -> title, as the run has them),
    every one built from the problem set in `folder` (or a shipped set's name); ReferencesRefused
    when the set lacks one of them, holds another problem under its id, or cannot build it."""
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.resources import SetNotFound, find_set

    ids = sorted(wanted)
    try:
        problem_set = load_set(find_set(folder))
    except SetNotFound:
        raise ReferencesRefused(folder, None, "no such problem set", ids) from None
    except ProblemSetError as exc:
        raise ReferencesRefused(folder, None, f"not a usable problem set ({exc.defects[0]})", ids) from None
    found = {p.id: p for p in problem_set.problems}
    for pid in ids:
        problem = found.get(pid)
        if problem is None or problem.kind is not Kind.REPRODUCE or not problem.executable:
            raise ReferencesRefused(folder, pid, f"the set has no reproduce problem {pid}", ids)
        if problem.title != wanted[pid]:
            raise ReferencesRefused(folder, pid, f"its {pid} is titled {problem.title!r}, the run's "
                                    f"{wanted[pid]!r}", ids)
    references = References(problem_set, limiter)
    try:
        for pid in ids:
            await references.folder(pid)
    except ReferenceUnavailable as exc:
        references.close()
        raise ReferencesRefused(folder, exc.problem, f"the reference of {exc.problem} does not build here "
                                f"({exc.reason})", ids) from None
    return references


def place(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` as `folder/name`, execute-only (and setgid `REFERENCE_GID` as root);
    return `folder`, which others may enter but not list."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    if os.geteuid() == 0:
        os.chown(path, 0, REFERENCE_GID)
        path.chmod(0o2111)  # after chown, which clears the setgid bit
    else:
        path.chmod(0o111)
    folder.chmod(0o711)
    folder.parent.chmod(0o711)
    return folder
