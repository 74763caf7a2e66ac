"""Housekeeping of the repositories gitswarm runs git in: a coordinator's mirror, a worker's folder.

git keeps a repository it fetches into by itself (`git maintenance run --auto`, then `gc
--auto`), and over a long run that goes wrong in three ways, each seen in a 2,000-episode split
run:

- the first automatic gc that leaves more than `gc.auto` unreachable loose objects (the claims
  the coordinator prunes, two weeks young) writes `gc.log` and stops itself for a day: from
  then on packs and loose objects pile up;
- until then each automatic gc repacks the whole repository into one pack, in the background
  of a fetch: 6 to 17 s of CPU at 1,000 episodes, more as the run grows;
- that full repack of a bare repository writes a reachability bitmap, and every push uses it:
  once stale (new commits since), a push's `pack-objects` walks every object written since the
  repack (0.29 s for a one-commit push at 2,000 episodes, against 0.09 s without the bitmap).

And the refs: with the automatic gc off nothing packs them, and a mirror gains an op ref for
every episode, a worker's folder four refs for each it ran; every push and fetch reads them all
(a one-commit push from a coordinator's mirror at 5,000 episodes, 9,800 loose op refs: 0.38 s,
0.13 s with them packed).

So a repository gitswarm owns has git's automatic housekeeping off (`own`), and is kept by
`Housekeeper`: once its loose objects or its packs pass a bound, `git repack -d --geometric=2`
rolls the loose objects and the small packs into one pack at least twice the size of the next
(git's geometric repacking): each object is rewritten about log2(objects) times over the run
and a lookup searches about as many packs, whatever the run's size; then `git pack-refs --all`
packs the refs written since, and `git commit-graph write --split` adds the commits written
since to the repository's commit-graph: a fetch's connectivity check (`rev-list --not --all`)
and negotiation and a repack's enumeration parse the commit of every local ref (a mirror's op
refs, one per episode), and with the graph each is a lookup instead of a parse (a fetch with
nothing new in a 10,000-ref mirror: 0.12-0.15 s of CPU, 0.04-0.05 s with the graph; a worker
folder's repack enumerated its objects in 1.83 s, 0.43 s with it). They run in the background,
one at a time, never on a fetch's path. The repack deletes only what it packed (a pack it
rolled up, a loose object now in a pack) and git packs refs under git's own locks, which the
memory's ref writes respect (`memory/gitrefs.py`), so writers beside them lose nothing. No
bitmap is written or read: these repositories are never served to a clone.
"""

from __future__ import annotations

import os
import subprocess
from collections import deque
from pathlib import Path

from gitswarm.memory.gitdir import GitDir

OWN = {"gc.auto": "0", "maintenance.auto": "false", "pack.useBitmaps": "false", "repack.writeBitmaps": "false"}
"""git's automatic housekeeping off, and no reachability bitmap (the module docstring's why)."""
LOOSE = 2048
"""Loose objects (estimated, as git does, from one of the 256 object folders) that start a repack."""
PACKS = 32
"""Packs that start a repack; a geometric progression of a run's objects has fewer."""
REPACK = ("repack", "-d", "-q", "--geometric=2", "--no-write-bitmap-index")
PACK_REFS = ("pack-refs", "--all")
COMMIT_GRAPH = ("commit-graph", "write", "--reachable", "--split", "--no-progress")
"""A layer of git's commit-graph for the commits written since the last (merged geometrically,
as git's own maintenance does; why: the module docstring). libgit2 reads only a single
`objects/info/commit-graph` file, so the memory's own reads are unaffected."""
_SAMPLE = "17"
"""The object folder whose count, times 256, estimates the loose objects (git's own choice)."""


def own(repo: GitDir) -> None:
    """Turn git's automatic housekeeping off in `repo` (idempotent: set only what differs)."""
    changed = {k: v for k, v in OWN.items() if repo.config(k) != v}
    if changed:
        repo.configure(changed)


class Housekeeper:
    """Starts the housekeeping of one repository when it is due (a geometric repack, then a
    packing of its refs and a layer of its commit-graph), one git at a time, in the background.
    Not thread-safe: `Remote` calls it under its write lock."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.running: subprocess.Popen[bytes] | None = None
        self.doing: tuple[str, ...] = ()
        """The git arguments of the one running (or the last run)."""
        self._next: deque[tuple[str, ...]] = deque()
        self.repacks = 0
        """Housekeepings started by this process."""
        self.stopped: str | None = None
        """Why housekeeping stopped for this process (a repack git refused: a git older than
        2.32 has no geometric repacking), or None."""

    def due(self) -> bool:
        """Whether the repository has passed a bound (`LOOSE`, `PACKS`)."""
        objects = self.path / "objects"
        try:
            loose = sum(1 for name in os.listdir(objects / _SAMPLE) if len(name) == 38) * 256
        except FileNotFoundError:
            loose = 0
        try:
            packs = sum(1 for name in os.listdir(objects / "pack") if name.endswith(".pack"))
        except FileNotFoundError:
            packs = 0
        return loose >= LOOSE or packs > PACKS

    def step(self) -> bool:
        """Start the next git of a housekeeping under way, or a new housekeeping if one is due;
        True when a new one was started."""
        if not self._finished():
            return False
        if self._next:
            self._start(self._next.popleft())
            return False
        if self.stopped is not None or not self.due():
            return False
        self._next.extend((PACK_REFS, COMMIT_GRAPH))
        self._start(REPACK)
        self.repacks += 1
        return True

    def wait(self, timeout: float | None = None) -> None:
        """Run the housekeeping under way to its end (the tests: a process leaves its last
        git to finish by itself)."""
        while self.running is not None:
            self.running.wait(timeout)
            self._finished()
            if self._next:
                self._start(self._next.popleft())

    def _start(self, args: tuple[str, ...]) -> None:
        self.doing = args
        self.running = subprocess.Popen(["git", "-C", str(self.path), *args], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        env={**os.environ, "LC_ALL": "C"})

    def _finished(self) -> bool:
        """Whether no git of ours is running (one that ended is reaped, a refused repack
        remembered and what was to follow it dropped)."""
        if self.running is None:
            return True
        if self.running.poll() is None:
            return False
        done, self.running = self.running, None
        said = done.stderr.read().decode(errors="replace").strip() if done.stderr is not None else ""
        if done.stderr is not None:
            done.stderr.close()
        if done.returncode != 0 and self.doing == REPACK and ("geometric" in said or "unknown option" in said):
            self.stopped = f"git repack refused geometric repacking: {said[:200]}"
            self._next.clear()
        return True
