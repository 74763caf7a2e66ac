"""Benchmark the store's git thread (`memory.store.GitThread`, one kept thread with a queue)
against anyio's `to_thread.run_sync` with a capacity limiter of one (the git thread before it),
measured in the same run: the process's CPU per call handed over (both threads), alone and
with `--waiting` calls in flight at once, for a call that does nothing and for a read of main's
tip from a real repository (`Memory.main`, what the engine asks most often).

A run of a few hundred episodes in flight hands the git thread two calls and the writer's
thread one per model call; each handing over is CPU of the engine's one core.

Usage: python scripts/bench_gitthread.py [--calls 5000] [--waiting 64]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread

from gitswarm.memory.repo import Memory
from gitswarm.memory.store import GitThread
from gitswarm.problems.loader import load_set
from gitswarm.resources import data_dir


async def per_call(hand: Callable[[Callable[[], object]], Awaitable[object]], fn: Callable[[], object],
                   calls: int, waiting: int) -> float:
    """CPU seconds of this process per call of `fn` handed over by `hand`, `waiting` at once."""
    async def caller(n: int) -> None:
        for _ in range(n):
            await hand(fn)

    start = time.process_time()
    async with anyio.create_task_group() as group:
        for _ in range(waiting):
            group.start_soon(caller, calls // waiting)
    return (time.process_time() - start) / (calls // waiting * waiting)


async def measure(calls: int, waiting: int, memory: Memory) -> None:
    limiter, thread = anyio.CapacityLimiter(1), GitThread()

    async def to_thread(fn: Callable[[], object]) -> object:
        return await anyio.to_thread.run_sync(fn, limiter=limiter)

    print(f"{'call':28} {'in flight':>9} {'to_thread':>10} {'GitThread':>10} {'ratio':>6}")
    for label, fn in (("nothing", lambda: None), ("Memory.main (a ref read)", memory.main)):
        for at_once in (1, waiting):
            await per_call(to_thread, fn, calls // 10, at_once)  # warm both
            await per_call(thread, fn, calls // 10, at_once)
            before = await per_call(to_thread, fn, calls, at_once)
            after = await per_call(thread, fn, calls, at_once)
            print(f"{label:28} {at_once:9} {before * 1e6:8.1f}us {after * 1e6:8.1f}us {after / before:6.2f}")
    thread.close()


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--calls", type=int, default=5000)
    cli.add_argument("--waiting", type=int, default=64)
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.create(Path(tmp) / "run", load_set(data_dir("problems") / "demo"))
        anyio.run(measure, args.calls, args.waiting, memory)


if __name__ == "__main__":
    main()
