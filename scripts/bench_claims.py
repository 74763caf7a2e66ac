"""Benchmark a look at every claim of a remote run, which the coordinator makes at each step.

A long run has one claim ref per episode, nearly all closed for good. Measured in the same
run, over `file://` and a `git daemon` on loopback, on a remote holding `--claims` claims:
- the baseline, the earlier look: fetch every claim by pattern (with prune), then read every
  claim commit's `claim.json`;
- `Claims.all` as it is: one ls-remote, a fetch of only the claim commits the mirror lacks,
  each claim commit read once and remembered;
- the same after `--moved` claims moved (renewals and closes between two looks).

Usage: python scripts/bench_claims.py [--claims N] [--moved M] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from gitswarm.remote import layout
from gitswarm.remote.claims import Claims, _load
from gitswarm.remote.daemon import GitDaemon, bare, daemon_path
from gitswarm.remote.transport import Remote


def earlier_look(claims: Claims) -> dict:
    """Every claim fetched by pattern and every claim commit read: the look before."""
    claims.remote.fetch([layout.claims_refspec()], prune=True)
    repo = claims.remote.repo()
    return {layout.episode_of(name): _load(repo, str(repo.references[name].target))
            for name in repo.references if layout.episode_of(name) is not None}


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(url: str, root: Path, count: int, moved: int, repeat: int) -> tuple[float, float, float]:
    worker = Claims(Remote(url, root / "worker.git"), "w", ttl_s=3600)
    held = []
    for _ in range(0, count, 100):
        held += worker.claim_next(["p"] * 100, 10**9)
    looker = Claims(Remote(url, root / "coordinator.git"), "c", ttl_s=3600)
    assert len(earlier_look(looker)) == len(looker.all()) == len(held)
    before = timed(lambda: earlier_look(looker), repeat)
    now = timed(looker.all, repeat)

    def after_moves() -> None:
        held[:moved] = worker.renew(held[:moved])
        start = time.perf_counter()
        looker.all()
        after_moves.seconds.append(time.perf_counter() - start)
    after_moves.seconds = []
    for _ in range(repeat):
        after_moves()
    return before, now, statistics.median(after_moves.seconds)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--claims", type=int, default=5000)
    cli.add_argument("--moved", type=int, default=64)
    cli.add_argument("--repeat", type=int, default=5)
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"a look at every claim, {args.claims:,} claims on the remote (median of {args.repeat})")
        moved = f"after {args.moved} moved"
        print(f"{'remote':10} {'earlier look':>13} {'Claims.all':>11} {'x faster':>9} {moved:>15}")
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
        for kind, (before, now, after) in rows:
            print(f"{kind:10} {before * 1000:10.0f} ms {now * 1000:8.0f} ms {before / now:8.2f}x "
                  f"{after * 1000:12.0f} ms")


if __name__ == "__main__":
    main()
