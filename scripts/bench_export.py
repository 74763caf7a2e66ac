"""How fast `gitswarm export` is on a run of many episodes (issue 25: seconds, not minutes).

Builds a run once (the real engine in this process, the scripted solver behind the fake
server, on `--problems` answer problems, every candidate graded by the answer grader), or
reuses the one in `--run`; then times, in turn and `--rounds` times, the export in each
layout against a baseline measured in the same run: reading every episode's record alone
(its lossless conversation, else its transcript) and writing it as JSON, which any export
must do. Prints episodes/s and the ratio of the baseline's time to the export's.

    python scripts/bench_export.py                      # 1,000 episodes, in a temporary folder
    python scripts/bench_export.py --episodes 200 --run /tmp/bench-export-run
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from bench_history import write_set

if TYPE_CHECKING:
    from gitswarm.export.run import Format


async def build(run: Path, episodes: int, problems: int, workers: int) -> None:
    """A run of about `episodes` episodes by the scripted solver, every candidate graded."""
    from gitswarm.demo.solver import Solver
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.run import solve
    from gitswarm.fakeserver import serve
    from gitswarm.memory.repo import Memory
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.problems.loader import load_set
    from gitswarm.referee.grade import grade_problem

    problem_set = load_set(write_set(run.with_name(f"{run.name}-set"), problems))
    answers = {p.id: str(p.answer) for p in problem_set.problems}
    async with serve(Solver(answers)) as server:
        config = ModelConfig(model="openai/scripted-solver", api_base=server.url, api_key="k", reply_timeout_s=30)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problem_set.path, run=run, model=config.model, workers=workers,
                          budget=episodes, max_episodes=episodes, settle_nominations=10 ** 6, no_progress=10 ** 6)
        await solve(cfg, problem_set, model, model)
    memory = Memory(run)
    for problem in problem_set.problems:
        await grade_problem(memory, problem, all_candidates=True)


def baseline(run: Path) -> int:
    """Every episode's record read and written as JSON, nothing else; returns the episodes."""
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.conversations import read_conversation
    from gitswarm.memory.repo import Memory

    memory = Memory(run)
    sink = io.StringIO()
    records = [r for r in Ledger.load(memory).episodes.values() if r.episode != "merger"]
    for record in records:
        found: object = read_conversation(memory.reader(), record.episode)
        if found is None:
            found = memory.transcript(record.commit) if record.commit else memory.book_text(record.transcript or ":")
        sink.write(json.dumps(found, ensure_ascii=False) + "\n")
    return len(records)


def export(run: Path, layout: Format, credit: str) -> int:
    """`gitswarm export` as the command runs it, to a string; returns the records."""
    from gitswarm.engine.tools import tool_schemas
    from gitswarm.export.labels import read_facts
    from gitswarm.export.run import export as records
    from gitswarm.memory.repo import Memory

    memory = Memory(run)
    sink = io.StringIO()
    count = 0
    for record in records(memory, tool_schemas, layout, read_facts(memory, credit)):
        sink.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def timed(fn, *args) -> tuple[float, int]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def options(doc: str, episodes: int, rounds: int) -> argparse.Namespace:
    """The options of a benchmark over one built run (this script's and `bench_status.py`'s)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=episodes)
    parser.add_argument("--problems", type=int, default=50)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--run", type=Path, help="Build the run here, or reuse the one there.")
    return parser.parse_args()


def built(args: argparse.Namespace, tmp: Path) -> Path:
    """`args.run` (else a run in `tmp`), built by `build` unless it is there already."""
    run = args.run or tmp / "run"
    if not (run / "HEAD").exists():
        start = time.perf_counter()
        anyio.run(build, run, args.episodes, args.problems, args.workers)
        print(f"built {run} in {time.perf_counter() - start:.0f} s")
    return run


def main() -> None:
    args = options(__doc__, episodes=1000, rounds=3)
    with tempfile.TemporaryDirectory() as tmp:
        run = built(args, Path(tmp))
        rows: dict[str, list[tuple[float, int]]] = {name: [] for name in ("baseline", "chat", "steps",
                                                                          "chat ancestry+reviews")}
        for _ in range(args.rounds):  # in turn: the machine's load drifts, so each round pairs its runs
            rows["baseline"].append(timed(baseline, run))
            rows["chat"].append(timed(export, run, "chat", "ancestry"))
            rows["steps"].append(timed(export, run, "steps", "ancestry"))
            rows["chat ancestry+reviews"].append(timed(export, run, "chat", "ancestry+reviews"))
        episodes = rows["baseline"][0][1]
        base = statistics.median(t for t, _ in rows["baseline"])
        print(f"run: {episodes} episodes; median of {args.rounds} rounds")
        for name, found in rows.items():
            seconds = statistics.median(t for t, _ in found)
            print(f"  {name:22} {seconds:7.2f} s  {episodes / seconds:8.0f} episodes/s  {found[0][1]:7} records"
                  f"  baseline/this {base / seconds:.2f}")


if __name__ == "__main__":
    main()
