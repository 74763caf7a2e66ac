"""Benchmark listing one ref folder of a coordinator's mirror: `refnames.under` against
iterating every ref through libgit2, the listing it replaced, measured in the same run.

The mirror is laid out as a long remote run leaves it: `--claims` claims in flight, and per
episode taken in an adopted branch and op ref of the coordinator's and a worker's branch and
op refs (`--episodes` of them), half packed and half loose, as fetches and `git gc --auto`
leave them. Each listing the coordinator makes at a step is timed (CPU seconds, median of
`--repeat`), and the names checked equal.

Usage: python scripts/bench_refnames.py [--episodes 5000] [--claims 256] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pygit2

from gitswarm.memory import refnames
from gitswarm.remote import layout

FOLDERS = {"claims (every step)": layout.CLAIMS, "high-water mark (every step)": layout.HIGH_WATER,
           "op refs (each step that took an episode in)": "refs/gitswarm/ops/",
           "workers' refs (each prune)": layout.WORKERS, "adopted branches (each prune)": "refs/heads/swarm/"}


def mirror(root: Path, episodes: int, claims: int) -> pygit2.Repository:
    subprocess.run(["git", "init", "-q", "--bare", str(root)], check=True)
    repo = pygit2.Repository(str(root))
    sig = pygit2.Signature("b", "b@example.org")
    commit = repo.create_commit(None, sig, sig, "b\n", repo.TreeBuilder().write(), [])
    lines = []
    for i in range(episodes):
        e = f"e{i:06d}"
        worker = f"refs/gitswarm/workers/w{i % 4}/"
        lines += [f"refs/heads/swarm/{e}", f"refs/gitswarm/ops/{e}-final",
                  f"{worker}heads/swarm/{e}", f"{worker}gitswarm/ops/{e}-final"]
        if i >= episodes - claims:
            lines.append(f"refs/gitswarm/claims/{e}")
        if i == episodes // 2:
            subprocess.run(["git", "-C", str(root), "update-ref", "--stdin"], check=True, text=True,
                           input="".join(f"create {n} {commit}\n" for n in lines))
            subprocess.run(["git", "-C", str(root), "pack-refs", "--all"], check=True)
            lines = []
    lines.append(f"refs/gitswarm/high-water/e{episodes - 1:06d}")
    subprocess.run(["git", "-C", str(root), "update-ref", "--stdin"], check=True, text=True,
                   input="".join(f"create {n} {commit}\n" for n in lines))
    return repo


def cpu(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--episodes", type=int, default=5000)
    cli.add_argument("--claims", type=int, default=256)
    cli.add_argument("--repeat", type=int, default=20)
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = mirror(Path(tmp) / "mirror.git", args.episodes, args.claims)
        total = len(repo.listall_references())
        print(f"mirror: {total:,} refs ({args.episodes:,} episodes, {args.claims} claims), half packed")
        for what, prefix in FOLDERS.items():
            every = {n for n in repo.references if n.startswith(prefix)}
            assert refnames.under(repo, prefix) == every, what
            before = cpu(lambda p=prefix: {n for n in repo.references if n.startswith(p)}, args.repeat)
            after = cpu(lambda p=prefix: refnames.under(repo, p), args.repeat)
            print(f"{what:45} {len(every):6,} refs: every ref {before * 1000:7.2f} ms, "
                  f"under {after * 1000:6.2f} ms   {after / before:.3f}x")


if __name__ == "__main__":
    main()
