"""Whether a run should pack its refs: writes with the op refs loose against packed, and what packing costs.

`python scripts/bench_packing.py [--commits 20000] [--more 300] [--rounds 3] [--cold]` builds a run of
`--commits` contributions through `Memory` (a merge every 8, as the merger does), so that it holds
one loose op ref per commit, the state a long run leaves. Then, on two copies of it:

- **loose**: as the run left it;
- **packed**: after `git pack-refs --all` (what a run's end does, and a user's `git gc`).

It writes `--more` contributions and their merges to each copy in turns, `--rounds` times, and
prints the CPU per commit written on each and their ratio (libgit2 checks a new ref's name
against every packed ref): whether packing as the run goes would slow its writes. It also
prints what the packing itself took, with the page cache warm and, with `--cold` as root,
emptied (`/proc/sys/vm/drop_caches`, the whole machine's): git reads each loose ref's object to
pack it, and late in a long run those objects have left the cache.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_history import new_run  # noqa: E402

from gitswarm.domain.contribution import Contribution  # noqa: E402
from gitswarm.memory.repo import Memory  # noqa: E402

MERGE_EVERY = 8


def write(memory: Memory, start: int, count: int) -> float:
    """Write contributions `start`..`start + count` and their merges; CPU seconds per commit."""
    problems = memory.problems()
    cpu = time.process_time()
    for i in range(start, start + count):
        memory.contribute(Contribution(problem=problems[i % len(problems)], episode=f"e{i:06d}",
                                       worker=f"w{i % 64:02d}", kind="note", title=f"note {i}",
                                       files={f"notes/n{i}.md": f"# Note {i}\n\nCase {i}.\n"},
                                       parent=memory.main(), op=f"e{i:06d}-final"))
        if (i + 1) % MERGE_EVERY == 0:
            memory.compose()
    memory.compose()
    return (time.process_time() - cpu) / count


def pack(run: Path) -> float:
    """Seconds `git pack-refs --all` took on `run`."""
    started = time.perf_counter()
    subprocess.run(["git", "--git-dir", str(run), "pack-refs", "--all"], check=True)
    return time.perf_counter() - started


def emptied_cache() -> bool:
    """Empty the page cache (root only); whether it was."""
    subprocess.run(["sync"], check=False)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--commits", type=int, default=20_000, help="contributions of the run built first")
    cli.add_argument("--more", type=int, default=300, help="contributions written to each copy in a round")
    cli.add_argument("--rounds", type=int, default=3, help="rounds, each copy written in turn")
    cli.add_argument("--cold", action="store_true", help="also pack with the page cache emptied (root)")
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        built = time.perf_counter()
        memory = new_run(root / "built", 50)
        write(memory, 0, args.commits)
        built = time.perf_counter() - built
        copies = {}
        for name in ("loose", "packed", "cold"):
            copies[name] = root / name
            shutil.copytree(memory.path, copies[name], symlinks=True)
        warm = pack(copies["packed"])
        cold = pack(copies["cold"]) if args.cold and emptied_cache() else None
        runs = {name: Memory(copies[name]) for name in ("loose", "packed")}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for k in range(args.rounds):
            for name, run in runs.items():
                cpu[name].append(write(run, args.commits + k * args.more, args.more))
    loose, packed = (statistics.median(cpu[n]) for n in ("loose", "packed"))
    print(f"a run of {args.commits:,} contributions and their merges (built in {built:.0f} s), "
          f"{args.commits:,} op refs")
    for name, value in (("loose", loose), ("packed", packed)):
        spread = ", ".join(f"{v * 1000:.2f}" for v in cpu[name])
        print(f"  op refs {name:6}: {value * 1000:.2f} ms CPU per commit written (rounds: {spread})")
    print(f"  packed / loose: {packed / loose:.2f}x")
    print(f"git pack-refs --all: {warm:.1f} s with the page cache warm, "
          + (f"{cold:.1f} s with it emptied" if cold is not None else
             "cold not measured (--cold, as root)"))


if __name__ == "__main__":
    main()
