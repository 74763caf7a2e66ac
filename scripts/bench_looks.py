"""Benchmark the coordinator's look at every claim of a remote run, which it makes at each step.

A long run has one claim ref per episode, nearly all closed for good. Measured in the same
run, over `file://` and a `git daemon` on loopback, on a remote holding `--claims` claims,
with nothing moved and after `--moved` claims moved (renewals and closes between two looks):
- the baseline, the earlier look: every claim fetched by pattern, every claim commit's
  `claim.json` read;
- `Claims.all` as it is: the same fetch, each claim commit read once and remembered.

Usage: python scripts/bench_looks.py [--claims N] [--moved M] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pygit2

from gitswarm.remote import layout
from gitswarm.remote.claimcommit import load
from gitswarm.remote.claims import Claims
from gitswarm.remote.daemon import GitDaemon, bare, daemon_path
from gitswarm.remote.transport import Remote


def earlier_look(claims: Claims) -> dict:
    """Every claim fetched by pattern and every claim commit read: the look before."""
    claims.remote.fetch([layout.claims_refspec()], prune=True)
    repo, mirror = pygit2.Repository(str(claims.remote.mirror)), claims.remote.gitdir()
    return {layout.episode_of(name): load(mirror, str(repo.references[name].target))
            for name in repo.references if layout.episode_of(name) is not None}


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(url: str, root: Path, count: int, moved: int, repeat: int) -> list[tuple[float, float]]:
    """(earlier, now) seconds with nothing moved, then after `moved` claims moved."""
    worker = Claims(Remote(url, root / "worker.git"), "w", ttl_s=3600)
    held = []
    for _ in range(0, count, 100):
        held += worker.claim_next(["p"] * 100, 10**9)
    looker = Claims(Remote(url, root / "coordinator.git"), "c", ttl_s=3600)
    assert len(earlier_look(looker)) == len(looker.all()) == len(held)
    still = [(timed(lambda: earlier_look(looker)), timed(looker.all)) for _ in range(repeat)]
    after = []
    for _ in range(repeat):  # each look in its own round after the same moves
        held[:moved] = worker.renew(held[:moved])
        earlier = timed(lambda: earlier_look(looker))
        held[:moved] = worker.renew(held[:moved])
        after.append((earlier, timed(looker.all)))
    return [tuple(statistics.median(x) for x in zip(*rows, strict=True)) for rows in (still, after)]


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--claims", type=int, default=5000)
    cli.add_argument("--moved", type=int, default=64)
    cli.add_argument("--repeat", type=int, default=5)
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare(root / "file" / "run.git")
        rows = [("file://", measure((root / "file" / "run.git").as_uri(), root / "file", args.claims, args.moved,
                                    args.repeat))]
        program = daemon_path()
        if program is not None:
            bare(root / "served" / "run.git")
            daemon = GitDaemon(program, root / "served")
            daemon.start()
            try:
                rows.append(("git://", measure(daemon.url("run.git"), root / "daemon", args.claims, args.moved,
                                               args.repeat)))
            finally:
                daemon.stop()
    print(f"a look at every claim, {args.claims:,} claims on the remote (median of {args.repeat})")
    print(f"{'remote':10} {'look':22} {'earlier':>9} {'now':>9} {'x faster':>9}")
    for kind, (still, after) in rows:
        for look, (old, new) in (("nothing moved", still), (f"after {args.moved} moved", after)):
            print(f"{kind:10} {look:22} {old * 1000:6.0f} ms {new * 1000:6.0f} ms {old / new:8.2f}x")


if __name__ == "__main__":
    main()
