"""Ref changes that may rewrite packed-refs, made by git's own protocol.

libgit2 (1.9, refdb_fs.c) rewrites packed-refs from a copy it read before it took
`packed-refs.lock`: `packed_delete` (deleting a ref that is packed) reloads the file, drops the
entry and writes every other entry back, and `compress` does the same with the loose refs
added. A `git pack-refs` that commits packed-refs in between (a user's `git gc`, `gc --auto`,
a hosting job) has moved a ref's value from its loose file into packed-refs and removed the
loose file; libgit2 then writes the value it had read before, and the ref goes back in time.
A run lost a ledger record that way: the merger deleted a packed branch while `git gc` ran
beside it, and the ledger's last write was gone with no error anywhere.

git's files backend takes `packed-refs.lock` before it reads packed-refs, and holds every
ref's own lock around it, so a packer waits for it and no value is read stale. So a change
that may rewrite packed-refs goes through git: `transact` (`git update-ref --stdin`, one
atomic transaction, each line compare-and-swap) and `pack` (`git pack-refs`). The merger's
hot path, deleting branches that are only loose, stays in libgit2 under `packed_locked`:
while we hold packed-refs.lock no packer can pack a ref, so libgit2 finds none of them packed
and never writes the file.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitswarm.errors import RunFault
from gitswarm.memory.errors import Contention, MemoryError_

TIMEOUT_S = 120
"""A git that takes longer than this holds the run's refs: a fault for a transaction, for a
packing only a delay (pack next time)."""
GRACE_S = 10
"""How long a git stopped at its timeout has to remove its lock files (it does on SIGTERM)."""
PACKED = "packed-refs"
STALE_S = 60.0
"""A packed-refs.lock this old was left by a writer that died holding it (git and we hold it
for milliseconds): it is taken over, or no ref could be packed or deleted again."""


class RefChangeFailed(MemoryError_, RunFault):
    """git refused a ref transaction for another reason than a moved ref or a held lock."""


@dataclass(frozen=True)
class RefChange:
    """One line of a transaction: `new` None deletes `name`; `new` equal to `old` only checks
    that `name` is at `old`; `old` None takes the ref at whatever it holds."""

    name: str
    new: str | None
    old: str | None = None

    def line(self) -> str:
        if self.new is None:
            return f"delete {self.name} {self.old or ''}".rstrip()
        if self.new == self.old:
            return f"verify {self.name} {self.old}"
        return f"update {self.name} {self.new} {self.old or ''}".rstrip()


def transact(repo: pygit2.Repository, changes: Sequence[RefChange], message: str) -> None:
    """Apply `changes` all or none. `Contention` when a ref was not at its `old` or another
    writer held a lock past git's own wait (core.filesRefLockTimeout, core.packedRefsTimeout):
    the caller's retry reads again and tries again."""
    if not changes:
        return
    text = "".join(f"{c.line()}\n" for c in changes)
    done = _git(repo, ["update-ref", "-m", message, "--stdin"], text)
    if done.returncode == 0:
        return
    said = done.stderr.strip()
    if "cannot lock ref" in said or "File exists" in said:
        raise Contention(said.removeprefix("fatal: "))
    raise RefChangeFailed(f"git update-ref refused a ref transaction: {said}")


def pack(repo: pygit2.Repository) -> bool:
    """Pack every loose ref; False when another writer held packed-refs.lock past git's wait or
    git did not finish in `TIMEOUT_S` (pack next time: nothing depends on it). git reads each
    loose ref's object to pack it (it peels it): thousands of them, out of the page cache,
    took minutes."""
    try:
        done = _git(repo, ["pack-refs", "--all"], "")
    except GitTimedOut:
        return False
    if done.returncode == 0:
        return True
    if "File exists" in done.stderr:
        return False
    raise RefChangeFailed(f"git pack-refs failed: {done.stderr.strip()}")


@contextlib.contextmanager
def packed_locked(repo: pygit2.Repository) -> Iterator[None]:
    """Hold `packed-refs.lock` (git's lock, O_EXCL): no packer changes packed-refs meanwhile.
    `Contention` when another writer holds it (the caller's retry waits)."""
    lock = Path(repo.path) / f"{PACKED}.lock"
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except FileExistsError:
        if not _stale(lock):
            raise Contention(f"{lock} is held by another writer") from None
        lock.unlink(missing_ok=True)
        raise Contention(f"{lock} was left by a writer that died; removed") from None
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def packed(repo: pygit2.Repository, names: Iterable[str]) -> bool:
    """Whether any of `names` is in packed-refs; read under `packed_locked`, it stays true."""
    try:
        text = (Path(repo.path) / PACKED).read_bytes()
    except FileNotFoundError:
        return False
    return any(f" {name}\n".encode() in text for name in names)


def _stale(lock: Path) -> bool:
    try:
        return time.time() - lock.stat().st_mtime > STALE_S
    except FileNotFoundError:
        return False


class GitTimedOut(RefChangeFailed):
    """git did not finish in `TIMEOUT_S` and was stopped (see `_git`)."""


def _git(repo: pygit2.Repository, args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    """git on this repository alone (no GIT_* variable of the caller's redirects it), its
    messages in English (they are read above). One that outlives `TIMEOUT_S` is stopped by
    SIGTERM, on which git removes packed-refs.lock and most ref locks it holds (a SIGKILL would
    leave them all; a loose ref's lock `git pack-refs` was pruning may stay, which the next
    run's start clears, `engine.runlock.clear_stale_locks`), then `GitTimedOut`."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "LC_ALL": "C", "LANGUAGE": "C"}
    command = ["git", "--git-dir", repo.path, *args]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env) as git:
        try:
            out, err = git.communicate(stdin, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            git.terminate()
            try:
                git.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                git.kill()
                git.communicate()
            raise GitTimedOut(f"git {args[0]} did not finish in {TIMEOUT_S} s on {repo.path}") from None
    return subprocess.CompletedProcess(command, git.returncode, out, err)
