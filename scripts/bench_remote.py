"""Benchmark the git cost of an episode over a remote: claim it, then push its results.

One episode's git work is a claim (`Claims.claim_next`: one atomic create) and its close
(`Claims.finish`: the claim marked done, the result branch, its op ref and the worker's
ledger book, in one atomic push). Measured in the same run, on the same machine:
- over `file://` (the baseline) and over a `git daemon` on loopback (`git://`);
- one episode per push against batches of `--batch` episodes (one claim push and one result
  push per batch, as a worker running C episodes at once may do);
- a plain `git push` of one new ref, the floor each of those pushes stands on;
- on an empty remote, and on one already holding `--preload` refs: a push costs more the
  more refs the remote has (receive-pack advertises and checks them all).

Each configuration of each round gets a fresh remote. Prints milliseconds and pushes per
episode, and ratios against the baseline.
Usage: python scripts/bench_remote.py [--episodes N] [--batch K] [--rounds R] [--preload REFS]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from gitswarm.remote import layout
from gitswarm.remote.claims import Claim, Claims
from gitswarm.remote.daemon import GitDaemon, bare, daemon_path
from gitswarm.remote.transport import Remote, Update

TTL = 3600.0


class Counted(Remote):
    """A Remote that counts its pushes."""

    pushes = 0

    def push(self, updates: Sequence[Update], *, follow: bool = True) -> None:
        self.pushes += 1
        super().push(updates, follow=follow)


def result(repo: pygit2.Repository, claim: Claim) -> str:
    """An episode's result commit: two small files in its problem folder."""
    builder = repo.TreeBuilder()
    for name in ("note.md", "SUMMARY.md"):
        builder.insert(name, repo.create_blob(f"{claim.episode} {name}\n".encode() * 20), FileMode.BLOB)
    sig = pygit2.Signature(claim.worker, f"{claim.worker}@gitswarm.local")
    return str(repo.create_commit(None, sig, sig, f"note({claim.problem}): {claim.episode}\n",
                                  builder.write(), []))


class Worker:
    """One worker's claims and results on a remote, with its ledger book chained per push."""

    def __init__(self, url: str, mirror: Path, name: str) -> None:
        self.remote = Counted(url, mirror)
        self.claims = Claims(self.remote, name, ttl_s=TTL)
        self.ledger: str | None = None

    def run(self, episodes: int, batch: int) -> float:
        """Claim and finish `episodes` episodes, `batch` per push; seconds per episode."""
        start = time.perf_counter()
        for _ in range(episodes // batch):
            claims = self.claims.claim_next(["p0"] * batch, cap=1_000_000)
            self.claims.finish(claims, self._results(claims))
        return (time.perf_counter() - start) / (episodes // batch * batch)

    def _results(self, claims: list[Claim]) -> list[Update]:
        repo, name = pygit2.Repository(str(self.remote.mirror)), self.claims.worker
        updates = []
        for claim in claims:
            commit = result(repo, claim)
            updates += [Update(layout.worker_ref(name, f"refs/heads/swarm/{claim.episode}"), commit),
                        Update(layout.worker_ref(name, f"refs/gitswarm/ops/{claim.episode}-final"), commit)]
        sig = pygit2.Signature(name, f"{name}@gitswarm.local")
        blob = repo.create_blob(" ".join(c.episode for c in claims).encode())
        builder = repo.TreeBuilder()
        builder.insert("episodes.txt", blob, FileMode.BLOB)
        parents = [pygit2.Oid(hex=self.ledger)] if self.ledger else []
        book = str(repo.create_commit(None, sig, sig, "ledger\n", builder.write(), parents))
        updates.append(Update(layout.worker_ref(name, "refs/gitswarm/ledger"), book, old=self.ledger))
        self.ledger = book
        return updates


def plain_push(url: str, mirror: Path, n: int) -> float:
    """Seconds per `git push` of one new ref holding a new commit: the floor of our pushes."""
    subprocess.run(["git", "init", "-q", "--bare", str(mirror)], check=True)
    total = 0.0
    for i in range(n):
        tree = subprocess.run(["git", "-C", str(mirror), "mktree"], input="", capture_output=True,
                              text=True, check=True).stdout.strip()
        commit = subprocess.run(["git", "-C", str(mirror), "commit-tree", tree, "-m", f"plain {i} {time.time()}"],
                                capture_output=True, text=True, check=True).stdout.strip()
        start = time.perf_counter()
        subprocess.run(["git", "-C", str(mirror), "push", "-q", url, f"{commit}:refs/plain/{i}"], check=True)
        total += time.perf_counter() - start
    return total / n


def preloaded(path: Path, refs: int) -> Path:
    """A bare repository holding `refs` packed refs (on one commit), as a remote mid-run."""
    bare(path)
    repo = pygit2.Repository(str(path))
    sig = pygit2.Signature("bench", "bench@gitswarm.local")
    commit = repo.create_commit(None, sig, sig, "preload\n", repo.TreeBuilder().write(), [])
    lines = [f"{commit} refs/gitswarm/workers/old/heads/swarm/p{i:06d}\n" for i in range(refs)]
    (path / "packed-refs").write_text("# pack-refs with: peeled fully-peeled sorted \n" + "".join(sorted(lines)))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=24, help="episodes per configuration and round")
    parser.add_argument("--batch", type=int, default=8, help="episodes per push when batched")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, configurations interleaved in each")
    parser.add_argument("--preload", type=int, default=10_000, help="refs already on the remote, second table")
    args = parser.parse_args()
    program = daemon_path()
    if program is None:
        raise SystemExit("git daemon is not installed here (no git-daemon under `git --exec-path`)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        daemon = GitDaemon(program, root / "served")
        daemon.base.mkdir()
        daemon.start()
        try:
            for refs in (0, args.preload):
                report(*measure(root / f"at{refs}", daemon, refs, args), refs, args)
        finally:
            daemon.stop()


def measure(root: Path, daemon: GitDaemon, refs: int, args) -> tuple[dict, dict, dict]:
    """Per configuration: seconds and pushes per episode, each on a fresh remote holding
    `refs` refs; and the plain push's seconds per transport."""
    root.mkdir()
    kinds = ("file://", "git://")
    configs = [(kind, batch) for batch in (1, args.batch) for kind in kinds]
    times: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    floors: dict[str, list[float]] = {kind: [] for kind in kinds}
    pushes: dict[tuple[str, int], int] = dict.fromkeys(configs, 0)
    for round_ in range(args.rounds):
        for kind, batch in [*configs, *((k, 0) for k in kinds)]:  # interleaved: drift hits all alike
            name = f"r{round_}-{kind[:3]}-{batch}"
            remote = preloaded(daemon.base / f"{root.name}-{name}.git", refs)
            url = remote.as_uri() if kind == "file://" else daemon.url(remote.name)
            if batch == 0:
                floors[kind].append(plain_push(url, root / f"{name}-plain.git", 8))
                continue
            worker = Worker(url, root / f"{name}.git", f"w-{kind[:3]}-{batch}")
            times[(kind, batch)].append(worker.run(args.episodes, batch))
            pushes[(kind, batch)] += worker.remote.pushes
    per_episode = args.rounds * args.episodes
    return ({c: statistics.median(t) for c, t in times.items()}, {c: n / per_episode for c, n in pushes.items()},
            {k: statistics.median(t) for k, t in floors.items()})


def report(rows: dict, pushes: dict, floors: dict, refs: int, args) -> None:
    base = rows[("file://", 1)]
    print(f"\nremote holding {refs:,} refs; {args.rounds} rounds of {args.episodes} episodes per configuration, "
          "medians; baseline: one episode per push over file://")
    print(f"{'configuration':40} {'ms/episode':>10} {'pushes/ep':>9} {'x base':>7}")
    for (kind, batch), seconds in rows.items():
        label = f"{kind} claim + results, {batch} per push"
        print(f"{label:40} {seconds * 1000:10.2f} {pushes[(kind, batch)]:9.3f} {seconds / base:7.2f}")
    for kind, seconds in floors.items():
        print(f"{'plain git push of one ref, ' + kind:40} {seconds * 1000:10.2f} {'':9} {seconds / base:7.2f}")
    print(f"git:// against file://, one episode per push: {rows[('git://', 1)] / base:.2f}x")
    for kind in floors:
        batched = rows[(kind, args.batch)] / rows[(kind, 1)]
        print(f"{kind} {args.batch} episodes per push against one: {batched:.2f}x the time per episode; "
              f"one episode (2 pushes) against 2 plain pushes: {rows[(kind, 1)] / (2 * floors[kind]):.2f}x")


if __name__ == "__main__":
    main()
