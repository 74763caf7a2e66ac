"""Dashboard throughput on a synthetic run: 256 workers, 10,000 commits.

Feeds the same JSON event lines to (a) json parsing alone (the baseline: the least any
consumer of the event log pays), (b) the reducer, (c) the headless app's frame (reducer plus
the widget updates of one batch), and prints time per batch and the ratios to the baseline.

    python scripts/bench_dashboard.py [--commits 10000] [--workers 256] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from gitswarm.core.events import Event
from gitswarm.tui.app import Dashboard
from gitswarm.tui.state import DashState


def synthetic(commits: int, workers: int, problems: int = 30) -> list[str]:
    """JSON lines of a run: each commit is an episode start, two steps, a tool call, the commit,
    and every 8th commit a merge."""
    t, lines = 1_700_000_000.0, []
    lines.append(Event("run_started", {"run": "bench", "model": "m", "budget": commits, "workers": workers,
                                       "charged": 0, "problems": [f"p{i:03d}" for i in range(problems)]},
                       t).to_json())
    for i in range(commits):
        w, e, p = f"w{i % workers:03d}", f"e{i:05d}", f"p{i % problems:03d}"
        base: dict[str, object] = {"episode": e, "worker": w, "problem": p}
        t += 0.01
        lines += [Event("episode_started", base, t).to_json(),
                  Event("step", {**base, "step": 1}, t).to_json(),
                  Event("tool", {**base, "tool": "read_file"}, t).to_json(),
                  Event("step", {**base, "step": 2}, t).to_json(),
                  Event("committed", {**base, "commit": f"{i:040x}", "tokens": 1000, "charged": i + 1},
                        t).to_json()]
        if i % 8 == 7:
            lines.append(Event("merged", {"commit": f"{i:040x}", "episodes": [e]}, t).to_json())
    return lines


def batches(lines: list[str], size: int) -> list[list[str]]:
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def parse(batch: list[str]) -> list[Event]:
    return [Event(**json.loads(line)) for line in batch]


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


async def app_frames(chunks: list[list[Event]], size: tuple[int, int]) -> list[float]:
    """The app's frame time per batch: fold the batch in and update the widgets."""
    with tempfile.TemporaryDirectory() as folder:
        app = Dashboard(Path(folder))
        frames = []
        async with app.run_test(size=size) as pilot:
            for chunk in chunks:
                app.pending.extend(chunk)
                frames.append(timed(app.flush))
                await pilot.pause(0)
        return frames


def ms(values: list[float]) -> str:
    return f"median {1000 * statistics.median(values):7.2f} ms, max {1000 * max(values):7.2f} ms"


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--commits", type=int, default=10_000)
    cli.add_argument("--workers", type=int, default=256)
    cli.add_argument("--batch", type=int, default=1000, help="events per frame")
    args = cli.parse_args()
    lines = synthetic(args.commits, args.workers)
    chunks = batches(lines, args.batch)
    parsed = [parse(c) for c in chunks]
    base = [timed(parse, c) for c in chunks]
    state = DashState()
    reducer = [timed(state.apply, c) for c in parsed]
    frames = asyncio.run(app_frames(parsed, (120, 40)))
    print(f"{len(lines)} events ({args.commits} commits, {args.workers} workers), {len(chunks)} batches "
          f"of {args.batch}")
    print(f"  parse JSON (baseline): {ms(base)}")
    print(f"  reducer:               {ms(reducer)}  ratio {statistics.median(reducer) / statistics.median(base):.2f}")
    print(f"  app frame:             {ms(frames)}  ratio {statistics.median(frames) / statistics.median(base):.2f}")
    per_event = statistics.median(frames) / args.batch * 1e6
    print(f"  app frame per event:   {per_event:.1f} us; at 10 frames/s it keeps up with "
          f"{args.batch * 10:,} events/s when a frame takes under 100 ms")


if __name__ == "__main__":
    main()
