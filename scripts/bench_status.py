"""How fast `gitswarm status` and a dashboard refresh read a run's read model, against the way
front matter was read before (PyYAML's pure-Python parser, each document composed twice),
measured in the same run on the same repository.

Builds a run once (bench_export's: the real engine, the scripted solver behind the fake
server, every candidate graded; 1,150 episodes make about 2,000 commits on main), or reuses
the one in `--run`. Then, in turn for `--rounds` rounds, the previous way and this one:
- `read_run` with a fresh index over main's history (what `status` did before it read the index
  kept beside the run, `memory/indexfile.py`);
- `gitswarm status RUN --json` through the real CLI (in this process: typer's CliRunner), over the
  kept index;
- one dashboard refresh: `tui.reader.Snapshots.read` with its index (and the read model's
  front matter by blob id, `readmodel.tree.FRONTS`) kept from the read before;
- the front matter of every problem's SOLUTION.md as a refresh reads it: `split` on each
  blob, and `memory.read.ParsedBlobs` keyed by blob id, warm (nothing new since the last read);
- the index kept beside the run: its load, a reader whose file is a little behind main, and
  how long the engine's write holds the index's lock (`kept_index_ways`).
Prints medians (CPU time) and before/after ratios, and checks both ways give the same read model.

    python scripts/bench_status.py                       # build in a temporary folder
    python scripts/bench_status.py --run /tmp/bench-status-run --rounds 7
"""

from __future__ import annotations

import functools
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
import yaml
from bench_export import built, options

from gitswarm.cli.status import collector_paused
from gitswarm.domain.index import MemoryIndex
from gitswarm.memory import indexfile, indexing, objects, trees
from gitswarm.memory.read import ParsedBlobs
from gitswarm.memory.repo import Memory
from gitswarm.problems import frontmatter
from gitswarm.readmodel import read as readmodel_read
from gitswarm.readmodel import tree as readmodel_tree
from gitswarm.readmodel.read import read_run


@contextmanager
def as_before() -> Iterator[None]:
    """Front matter read as before: PyYAML's pure-Python parser, and each document composed
    once more (the previous `split` composed it for the key lines, then `safe_load` again)."""
    fast, load = frontmatter.FAST, frontmatter._load

    def twice(yaml_text: str, loader: type) -> tuple[frontmatter.Pairs, object]:
        yaml.compose(yaml_text, Loader=loader)
        return load(yaml_text, loader)

    frontmatter.FAST, frontmatter._load = yaml.SafeLoader, twice
    kept, readmodel_read.FRONTS = readmodel_read.FRONTS, Unkept()
    try:
        yield
    finally:
        frontmatter.FAST, frontmatter._load = fast, load
        readmodel_read.FRONTS = kept


class Unkept(ParsedBlobs[dict]):
    """The read model's front matter cache as it was before there was one: every read parses."""

    def __init__(self) -> None:
        super().__init__(readmodel_tree.front)

    def get(self, repo: pygit2.Repository, oid: pygit2.Oid) -> dict:
        return readmodel_tree.front(objects.blob(repo, oid).data)


def new_process() -> None:
    """The read model's caches as a `gitswarm status` process starts: empty (none, before)."""
    if not isinstance(readmodel_read.FRONTS, Unkept):
        readmodel_read.FRONTS = ParsedBlobs(readmodel_tree.front)


def timed(fn: Callable[[], object]) -> float:
    """CPU seconds `fn` takes: on a shared 2-core machine, wall time mostly measures the others."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def status_json(run: Path) -> str:
    from typer.testing import CliRunner

    from gitswarm.cli.main import app

    result = CliRunner().invoke(app, ["status", str(run), "--json"])
    assert result.exit_code == 0, result.output
    return result.stdout


def refresh(run: Path, refreshes: int) -> list[float]:
    """The dashboard's reads after its first: each over the index the read before kept."""
    from gitswarm.tui.reader import Snapshots

    memory, snapshots = Memory(run), Snapshots()
    snapshots.read(memory)
    return [timed(lambda: snapshots.read(memory)) for _ in range(refreshes)]


def solutions(memory: Memory) -> list[pygit2.Oid]:
    """The blob id of every problem's SOLUTION.md on main."""
    root = memory.repo[memory.main()].peel(pygit2.Tree)
    found = (trees.lookup(root, f"problems/{pid}/SOLUTION.md") for pid in memory.problems())
    return [entry[0] for entry in found if entry is not None]


def front(data: bytes) -> dict:
    return frontmatter.split(data.decode("utf-8", "replace")).values


Way = Callable[[], list[float]]


def ways(run: Path) -> dict[str, tuple[Way, Way]]:
    """Each figure's two ways: the first is timed as before (inside `as_before`), the second as now."""
    memory = Memory(run)
    ids = solutions(memory)
    kept = ParsedBlobs(front)
    for oid in ids:
        kept.get(memory.repo, oid)

    def fresh() -> list[float]:
        new_process()
        return [timed(lambda: read_run(Memory(run), MemoryIndex()))]  # built over history, not the kept file

    def cli() -> list[float]:
        new_process()
        return [timed(lambda: status_json(run))]

    def dashboard() -> list[float]:
        return refresh(run, 3)

    def split() -> list[float]:
        return [timed(lambda: [front(objects.blob(memory.repo, oid).data) for oid in ids])]

    def cached() -> list[float]:
        return [timed(lambda: [kept.get(memory.repo, oid) for oid in ids])]

    return {"read_run (fresh index, as status)": (fresh, fresh), "status --json (CLI)": (cli, cli),
            "dashboard refresh (Snapshots, kept index)": (dashboard, dashboard),
            f"SOLUTION.md front matter x{len(ids)}: split": (split, split),
            f"SOLUTION.md front matter x{len(ids)}: ParsedBlobs": (split, cached)} | kept_index_ways(run)


@functools.cache  # built once: `ways` is asked again each round
def kept_index_ways(run: Path) -> dict[str, tuple[Way, Way]]:
    """The kept index (`memory/indexfile.py`), before and now:
    - its load: with every map made at once (the engine's per-commit files and taken commits
      too, as the one-line format made them), and with those left until asked for;
    - a reader (a status) whose file is behind main by the commits of a few seconds of a run
      (1 in 200): writing the whole file back as before, and not writing it for so few now;
    - the engine's write, as the index's lock is held: through the encoding before, through a
      copy of the index now."""
    repo = Memory(run).repo
    main = Memory(run).main()
    chain = [str(c.id) for c in repo.walk(pygit2.Oid(hex=main), pygit2.enums.SortMode.TOPOLOGICAL)]
    behind = indexing_built(repo, chain[max(1, len(chain) // 200)])
    file = indexfile.path_of(repo)
    whole = indexing_built(repo, main)
    indexfile.save(whole, repo)
    at_main, behind_main = file.read_bytes(), indexfile._encode(behind)

    def load(made: bool) -> list[float]:
        file.write_bytes(at_main)

        def read() -> None:
            index = indexfile.load(repo)
            assert index is not None
            if made:
                len(index.files_of), len(index.taken)

        with collector_paused():  # as `status` reads
            return [timed(read)]

    def reader(rule: int) -> list[float]:
        file.write_bytes(behind_main)
        kept, indexfile.REREAD = indexfile.REREAD, rule
        try:
            with collector_paused():
                return [timed(lambda: indexfile.kept(repo, main))]
        finally:
            indexfile.REREAD = kept
            file.write_bytes(at_main)

    return {"kept index: load": (lambda: load(True), lambda: load(False)),
            "kept index: a reader behind main, 1/200": (lambda: reader(10 ** 9), lambda: reader(indexfile.REREAD)),
            "kept index: the engine's write, lock held": (lambda: [timed(lambda: indexfile._encode(whole))],
                                                         lambda: [timed(whole.copy)])}


def indexing_built(repo: pygit2.Repository, tip: str) -> MemoryIndex:
    index = MemoryIndex()
    indexing.update(index, repo, tip)
    return index


def measure(run: Path, rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    """Each figure's times before and now, the two ways in turn in each round (the machine's
    load drifts, so each round pairs its runs)."""
    found: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in ways(run)}
    for _ in range(rounds):
        for name, (old, new) in ways(run).items():
            with as_before():
                found[name][0].extend(old())
            found[name][1].extend(new())
    return found


def same_model(run: Path) -> None:
    """Both ways give the same read model."""
    now = read_run(Memory(run)).as_dict()
    with as_before():
        assert read_run(Memory(run)).as_dict() == now, "the read model differs from the one read as before"


def main() -> None:
    args = options(__doc__, episodes=1150, rounds=5)
    with tempfile.TemporaryDirectory() as tmp:
        run = built(args, Path(tmp))
        same_model(run)
        memory = Memory(run)
        commits = sum(1 for _ in memory.repo.walk(memory.main()))
        print(f"run: {commits} commits on main, {len(memory.problems())} problems, "
              f"libyaml {'yes' if yaml.__with_libyaml__ else 'no'}; medians of {args.rounds} rounds")
        print(f"  {'':48} {'before':>9} {'after':>9}  before/after")
        for name, (before, after) in measure(run, args.rounds).items():
            b, a = statistics.median(before), statistics.median(after)
            print(f"  {name:48} {1000 * b:7.1f}ms {1000 * a:7.1f}ms  {b / a:6.2f}")


if __name__ == "__main__":
    main()
