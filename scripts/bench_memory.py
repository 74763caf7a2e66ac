"""Benchmark the memory's hot path against raw pygit2 and the git CLI, in the same run.

Prints contribution commits per second and merge latency with ratios:
- contribution commit (Memory.contribute: validation, blobs, tree, commit, branch + op refs)
  against a raw pygit2 write of the same objects (blobs, tree, commit, one ref);
- the same commit through `git add && git commit` in a worktree;
- a disjoint merge of one branch into main (Memory.compose) on a tree of ~2,000 files.

Targets (2-core machine): contribution <= 1.5x raw pygit2; disjoint merge < 2 ms.
Usage: python scripts/bench_memory.py [--commits N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pygit2

from gitswarm.domain.contribution import Contribution
from gitswarm.memory import trees
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set

PROBLEMS = 20


def make_memory(root: Path, preload: int) -> Memory:
    """A run of 20 problems whose tree holds ~`preload` files, spread over the problems."""
    (root / "set").mkdir(parents=True)
    for k in range(PROBLEMS):
        (root / "set" / f"p{k}.md").write_text(f"---\nkind: proof\n---\nProve claim {k}.\n")
    memory = Memory.create(root / "run", load_set(root / "set"), run_id="bench")
    per_problem = preload // PROBLEMS
    for k in range(PROBLEMS):
        for start in range(0, per_problem, 50):
            files = {f"notes/pre-{j}.md": f"note {k} {j}\n" for j in range(start, start + 50)}
            memory.contribute(contribution(memory, f"pre{k}-{start}", files, f"p{k}"))
    memory.compose()
    return memory


def contribution(memory: Memory, episode: str, files: dict, problem: str = "p0") -> Contribution:
    return Contribution(problem=problem, episode=episode, worker="w01", kind="note",
                        title=f"note {episode}", files=files, parent=memory.main(), op=f"{episode}-c")


def files_for(i: int) -> dict[str, bytes]:
    return {f"notes/n{i}.md": f"observation {i}\n".encode() * 20,
            f"lemmas/l{i}.md": f"lemma {i}\n".encode() * 20,
            "SUMMARY.md": f"summary after {i}\n".encode()}


def contribute_once(memory: Memory, i: int) -> float:
    c = contribution(memory, f"b{i}", files_for(i))
    start = time.perf_counter()
    memory.contribute(c)
    return time.perf_counter() - start


def raw_once(repo: pygit2.Repository, i: int) -> float:
    """The same objects written with raw pygit2: blobs, tree, commit, one ref."""
    tip = repo.references["refs/heads/main"].target
    sig = pygit2.Signature("w01", "w01@gitswarm.local")
    start = time.perf_counter()
    changes = trees.blobs(repo, files_for(i + 1_000_000), "problems/p0/")
    tree = trees.update(repo, repo[tip].tree, changes)
    repo.create_commit(f"refs/heads/raw/{i}", sig, sig, f"note {i}\n", tree, [tip])
    return time.perf_counter() - start


def bench_writes(memory: Memory, n: int) -> tuple[list[float], list[float]]:
    """Interleaved, so that drift (caches, a busy machine) hits both alike."""
    raw, ours = [], []
    for i in range(n):
        raw.append(raw_once(memory.repo, i))
        ours.append(contribute_once(memory, i))
    for name in list(memory.repo.references):  # drop them: they all rewrite SUMMARY.md
        if name.startswith(("refs/heads/raw/", "refs/heads/swarm/b")):
            memory.repo.references.delete(name)
    return raw, ours


def bench_git_cli(root: Path, n: int) -> list[float]:
    work = root / "cli"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    times = []
    for i in range(n):
        for path, data in files_for(i).items():
            target = work / "problems/p" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        start = time.perf_counter()
        subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(work), "-c", "user.name=w01", "-c", "user.email=w@x",
                        "commit", "-q", "-m", f"note {i}"], check=True)
        times.append(time.perf_counter() - start)
    return times


def bench_merge(memory: Memory, n: int) -> list[float]:
    times = []
    for i in range(n):
        memory.contribute(contribution(memory, f"m{i}", {f"notes/m{i}.md": f"m {i}\n"}))
        start = time.perf_counter()
        memory.compose([f"m{i}"])  # as the engine does: it knows which branch just finished
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--tree-files", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        memory = make_memory(root, args.tree_files)
        raw_times, our_times = bench_writes(memory, args.commits)
        raw, ours = statistics.median(raw_times), statistics.median(our_times)
        cli = statistics.median(bench_git_cli(root, min(args.commits, 100)))
        merge = statistics.median(bench_merge(memory, min(args.commits, 200)))
    rows = [
        ("raw pygit2 write (baseline)", raw, 1.0, ""),
        ("Memory.contribute", ours, ours / raw, "<= 1.5x raw" + (" PASS" if ours / raw <= 1.5 else " FAIL")),
        ("git add && git commit", cli, cli / raw, ""),
        ("disjoint merge into main", merge, merge / raw, "< 2 ms" + (" PASS" if merge < 0.002 else " FAIL")),
    ]
    print(f"tree of ~{args.tree_files} files in {PROBLEMS} problems, {args.commits} commits, medians")
    print(f"{'operation':32} {'ms':>8} {'per s':>8} {'x raw':>7}  target")
    for name, seconds, ratio, target in rows:
        print(f"{name:32} {seconds * 1000:8.3f} {1 / seconds:8.0f} {ratio:7.2f}  {target}")


if __name__ == "__main__":
    main()
