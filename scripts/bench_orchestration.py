"""The orchestration figure of bench.py: the real engine in one process, the scripted model
behind the fake server in another (the model is remote in real use, so its CPU is not ours).

`python scripts/bench_orchestration.py serve PORT LATENCY LOG` runs the server;
`python scripts/bench_orchestration.py engine C ...` runs one swarm and prints one JSON line;
`python scripts/bench_orchestration.py bare C PORT` the baseline: model calls alone, no engine.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import json
import os
import pstats
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
from bench_history import write_set


async def serve_brain(port: int, latency: float, log: Path, requests: bool = False, persist: bool = False,
                      every: bool = False) -> None:
    """The scripted model with a fixed latency; logs each worker call's arrival time, and with
    `requests` the call itself (`requests_of`: a worker's, a call with tools; with `every`, every
    call: the merger's server); `persist`: it attempts again where it would
    abstain (`brain.respond`)."""
    from gitswarm.demo.brain import respond
    from gitswarm.fakeserver import FaultPlan, serve

    with log.open("a", buffering=1) as out:
        def timed(body: dict):
            out.write(f"{time.time() - latency:.4f} {int(bool(body.get('tools')))}\n")
            if requests and (every or body.get("tools")):  # for the baseline that replays them (`bare --replay`);
                with requests_of(log).open("a") as bodies:  # opened each time: bench.py moves the file away
                    bodies.write(json.dumps({k: body.get(k) for k in ("messages", "tools", "tool_choice")}) + "\n")
            return respond(body, persist)

        async with serve(timed, FaultPlan(latency_s=latency), port=port):
            await anyio.sleep_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the fake server did not listen on port {port}")


def requests_of(log: Path) -> Path:
    """Where the server beside `log` writes the worker calls it received, one JSON line each."""
    return log.with_name(log.name + ".requests")


@contextmanager
def serving(latency: float, log: Path, requests: bool = False, persist: bool = False,
            every: bool = False) -> Iterator[str]:
    """The scripted model behind the fake server in its own process; yields its URL. With
    `requests` it logs every worker call it receives (tens of kilobytes each: not for long runs);
    `persist` makes it attempt again where it would abstain."""
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "serve", str(port), str(latency), str(log),
                               *(["--requests"] if requests else []), *(["--persist"] if persist else []),
                               *(["--every"] if every else [])])
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=10)


class Timings:
    """Wall time of Memory calls and the git thread's queueing, by function name."""

    def __init__(self) -> None:
        self.run: dict[str, list[float]] = defaultdict(list)
        self.queued: list[float] = []
        self.cpu: dict[str, float] = defaultdict(float)
        """CPU seconds of the git thread itself (user and system), by function name."""
        self.system = 0.0
        """The system part of those seconds, all functions together (file writes, ref locks)."""
        self.merged = 0

    def install(self) -> None:
        from gitswarm.memory.repo import Memory
        from gitswarm.memory.store import GitThread

        for name in ("contribute", "compose"):
            setattr(Memory, name, self._timed(getattr(Memory, name), name))
        original = GitThread.__call__

        async def call(git, fn, *args):
            asked = time.perf_counter()

            def inner():
                self.queued.append(time.perf_counter() - asked)
                start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_THREAD)
                try:
                    return fn(*args)
                finally:
                    after = resource.getrusage(resource.RUSAGE_THREAD)
                    self.run[getattr(fn, "__name__", "?")].append(time.perf_counter() - start)
                    self.cpu[getattr(fn, "__name__", "?")] += (after.ru_utime - before.ru_utime
                                                             + after.ru_stime - before.ru_stime)
                    self.system += after.ru_stime - before.ru_stime
            return await original(git, inner)

        GitThread.__call__ = call  # type: ignore[method-assign]  # instrumented on purpose, as Memory's above

    def _timed(self, method, name):
        @functools.wraps(method)
        def timed(memory, *args, **kwargs):
            start = time.perf_counter()
            result = method(memory, *args, **kwargs)
            self.run[f"memory.{name}"].append(time.perf_counter() - start)
            if name == "compose":
                self.merged += len(result.merged)
            return result
        return timed


def raw_baseline(run: Path, n: int = 200) -> float:
    """Median raw pygit2 write (blobs, tree, commit, one ref) on the finished run's repository."""
    import pygit2
    from bench_memory import raw_once

    repo = pygit2.Repository(str(run))
    return statistics.median(raw_once(repo, i) for i in range(n))


async def engine(c: int, port: int, merger_port: int, per_worker: int, problems: int, profile: bool) -> dict:
    """Run one swarm of C workers against the server at `port` (the merger's model at
    `merger_port`); return the figures."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.modelsettings import ModelSettings
    from gitswarm.engine.run import solve
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.models.lib import litellm_module as _litellm
    from gitswarm.problems.loader import load_set

    _litellm()  # a one-off import of seconds, not orchestration
    if switch := os.environ.get("BENCH_SWITCH_INTERVAL"):  # GIL hand-over experiment, see bench.py --help
        sys.setswitchinterval(float(switch))
    timings = Timings()
    timings.install()
    collector = GcTime()
    started: list[tuple[float, float]] = []  # (wall, process time) of each episode's start
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_set(Path(tmp) / "set", problems)
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=f"http://127.0.0.1:{port}/v1",
                             api_key="k", reply_timeout_s=120)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=folder, run=Path(tmp) / "run", model=config.model, workers=c,
                          budget=c * per_worker, settle_nominations=10**6, seed=1)
        # The merger's client as the CLI builds it (not streamed, `ModelSettings.merger`).
        merger = LiteLLMModel(ModelSettings.of(cfg, f"http://127.0.0.1:{merger_port}/v1").merger)

        def listener(event) -> None:
            if event.kind == "episode_started":
                started.append((time.time(), time.process_time()))
        profiler = cProfile.Profile() if profile else None
        t0, cpu0, usage0 = time.time(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if profiler:
            profiler.enable()
        result = await solve(cfg, load_set(folder), model, merger, [listener])
        if profiler:
            profiler.disable()
        wall, cpu = time.time() - t0, time.process_time() - cpu0
        children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the book writer, ended with the run
        writer_cpu = (children.ru_utime - children0.ru_utime) + (children.ru_stime - children0.ru_stime)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        usage = rusage_since(usage0)
        raw = raw_baseline(cfg.run)
    figures = {"c": c, "t0": t0, "wall": wall, "cpu": cpu, "rss_mb": rss_mb, "last_start": started[-1][0],
               "cpu_window": (started[-1][1] - cpu0) / max(started[-1][0] - t0, 1e-9),
               "rusage": usage, "gc": collector.figures(),
               "charged": result.charged, "reason": str(result.reason), "raw_write": raw,
               "contribute": (statistics.median(timings.run["memory.contribute"])  # None: the writer
                              if timings.run["memory.contribute"] else None),      # process made them
               "compose_total": sum(timings.run["memory.compose"]), "merged": timings.merged,
               "git_busy": sum(sum(v) for k, v in timings.run.items() if not k.startswith("memory.")),
               "git_queue_p50": statistics.median(timings.queued), "git_queue_max": max(timings.queued),
               "git_calls": len(timings.queued),
               "git_cpu": sum(timings.cpu.values()), "git_sys": timings.system, "writer_cpu": writer_cpu,
               "git_by_fn": sorted(((k, sum(v), len(v), timings.cpu[k]) for k, v in timings.run.items()
                                    if not k.startswith("memory.")),
                                   key=lambda t: -t[1])[:8]}
    if profiler:
        figures["profile"] = by_package(profiler)
        figures["profile_functions"] = by_function(profiler)
    return figures


async def bare(c: int, port: int, rounds: int, replay: Path | None = None,
               merger: tuple[int, Path] | None = None) -> dict:
    """The baseline: C tasks that do nothing but call the model through the same LiteLLMModel,
    no engine at all: `rounds` calls each of first-prompt-sized messages with the tool schemas,
    or, with `replay`, the worker calls an engine run made (its messages, tools and tool choice,
    as the server received them), shared among the C tasks: the same calls without the engine.
    With `merger` (its server's port and the calls it logged), the merger's calls of that run
    too, made one at a time beside them through the merger's client as the run builds it (not
    streamed), as the merger makes them: every model call of the run, without the engine.
    `calls` counts the worker calls alone, as the engine's figures do. The garbage collector
    leaves what is alive as the calls start out of its passes, as the engine's loop does
    (`engine/collector.py`): the figure is the engine's own work, not that setting's."""
    from gitswarm.engine.collector import frozen
    from gitswarm.engine.tools import tool_schemas
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.models.lib import litellm_module as _litellm
    from gitswarm.resources import render

    _litellm()
    stream = os.environ.get("BENCH_STREAM", "1") != "0"  # bench.py's streamed / not-streamed comparison
    model = LiteLLMModel(ModelConfig(model="openai/gitswarm-scripted", api_base=f"http://127.0.0.1:{port}/v1",
                                     api_key="k", reply_timeout_s=120, stream=stream))
    messages = [{"role": "system", "content": render("worker_system.md.j2", max_steps=12, code=False,
                                                       verify=2, settle_nominations=3, in_row=False,
                                                       nominations=True, assigned=False, reviewer=False,
                                                       blind=False)},
                {"role": "user", "content": "Problem p001: what is 1 + 1? Give the number.\n" * 40}]
    tools = tool_schemas()
    made, merged = [0], [0]
    merger_model = _merger_client(merger[0]) if merger else None

    def calls() -> Iterator[tuple[list[dict], list[dict], str | None]]:  # read as they are made: RSS as the engine's
        if replay is None:
            yield from [(messages, tools, None)] * (c * rounds)
            return
        with replay.open() as lines:
            for body in map(json.loads, lines):
                yield body["messages"], body["tools"], body["tool_choice"]
    queue = calls()

    async def worker() -> None:
        for asked, offered, choice in queue:  # one generator: each task takes the next call
            made[0] += 1
            await model.complete(asked, tools=offered, tool_choice=choice)

    async def merging() -> None:
        assert merger is not None and merger_model is not None
        with merger[1].open() as lines:
            for body in map(json.loads, lines):
                merged[0] += 1
                await merger_model.complete(body["messages"], tools=body["tools"], tool_choice=body["tool_choice"])

    collector = GcTime()
    t0, cpu0, usage0 = time.time(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
    with frozen():  # what is alive now out of the collector's passes, as in the engine's loop
        async with anyio.create_task_group() as tg:
            for _ in range(c):
                tg.start_soon(worker)
            if merger is not None:
                tg.start_soon(merging)
    wall, cpu = time.time() - t0, time.process_time() - cpu0
    return {"c": c, "calls": made[0], "merger_calls": merged[0], "rusage": rusage_since(usage0),
            "gc": collector.figures(),
            "wall": wall,
            "calls_per_s": made[0] / wall,
            "cpu_per_call": cpu / made[0],
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _merger_client(port: int):
    """The merger's client as `engine` builds it (`ModelSettings.merger`: not streamed)."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.modelsettings import ModelSettings
    from gitswarm.models.client import LiteLLMModel

    with tempfile.TemporaryDirectory() as tmp:
        cfg = SolveConfig(problems=write_set(Path(tmp) / "set", 1), run=Path(tmp) / "run",
                          model="openai/gitswarm-scripted", workers=4, budget=4)
    return LiteLLMModel(ModelSettings.of(cfg, f"http://127.0.0.1:{port}/v1").merger)


class GcTime:
    """Seconds the cyclic garbage collector ran, by generation (gc.callbacks)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._start
            self.count[info["generation"]] += 1

    def figures(self) -> dict:
        return {"count": self.count, "seconds": self.seconds}


def rusage_since(before) -> dict:
    """The process's user and system CPU seconds and context switches since `before`."""
    now = resource.getrusage(resource.RUSAGE_SELF)
    return {"user": now.ru_utime - before.ru_utime, "sys": now.ru_stime - before.ru_stime,
            "voluntary": now.ru_nvcsw - before.ru_nvcsw, "involuntary": now.ru_nivcsw - before.ru_nivcsw}


def by_package(profiler: cProfile.Profile, top: int = 12) -> list[tuple[str, float]]:
    """Own CPU time of the event-loop thread, grouped by top-level package."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    totals: dict[str, float] = defaultdict(float)
    for (path, _line, func), (_cc, _nc, tottime, _ct, _callers) in stats.items():
        if func != "<method 'poll' of 'select.epoll' objects>":  # idle: waiting for the network
            totals[_package(path, func)] += tottime
    return sorted(totals.items(), key=lambda kv: -kv[1])[:top]


def by_function(profiler: cProfile.Profile, top: int = 20) -> list[tuple[str, float, float, int]]:
    """The event-loop thread's functions with the most CPU: (name, own, cumulative, calls)."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = [(f"{_package(path, func)}:{Path(path).name}:{line}({func})", tottime, cumtime, nc)
            for (path, line, func), (_cc, nc, tottime, cumtime, _callers) in stats.items()
            if func != "<method 'poll' of 'select.epoll' objects>"]
    return sorted(rows, key=lambda r: -r[1])[:top]


def _package(path: str, func: str) -> str:
    if path == "~":
        return f"builtin {func}"[:60]
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            tail = path.split(marker, 1)[1].lstrip("/").split("/")
            return tail[0] if marker == "site-packages/" else f"stdlib {tail[1] if len(tail) > 1 else tail[0]}"
    return "gitswarm" if "gitswarm" in path else path[-40:]


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = cli.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("serve")
    s.add_argument("port", type=int)
    s.add_argument("latency", type=float)
    s.add_argument("log", type=Path)
    s.add_argument("--requests", action="store_true", help="log each worker call too (`requests_of`)")
    s.add_argument("--persist", action="store_true", help="attempt again where the scripted model would abstain")
    s.add_argument("--every", action="store_true", help="with --requests: every call, not only those with tools")
    e = sub.add_parser("engine")
    e.add_argument("c", type=int)
    e.add_argument("port", type=int)
    e.add_argument("merger_port", type=int)
    e.add_argument("--per-worker", type=int, default=4)
    e.add_argument("--problems", type=int, default=0)
    e.add_argument("--profile", action="store_true")
    b = sub.add_parser("bare")
    b.add_argument("c", type=int)
    b.add_argument("port", type=int)
    b.add_argument("--rounds", type=int, default=6)
    b.add_argument("--replay", type=Path, help="the worker calls a server logged (`requests_of`), made again")
    b.add_argument("--merger", nargs=2, metavar=("PORT", "REQUESTS"),
                   help="the merger's calls its server logged, made again beside them as the merger makes them")
    args = cli.parse_args()
    if args.mode == "serve":
        anyio.run(serve_brain, args.port, args.latency, args.log, args.requests, args.persist, args.every)
        return
    if args.mode == "bare":
        merger = (int(args.merger[0]), Path(args.merger[1])) if args.merger else None
        json.dump(anyio.run(bare, args.c, args.port, args.rounds, args.replay, merger), sys.stdout)
        print()
        return
    problems = args.problems or max(4, args.c // 4)
    figures = anyio.run(engine, args.c, args.port, args.merger_port, args.per_worker, problems, args.profile)
    json.dump(figures, sys.stdout)
    print()


if __name__ == "__main__":
    main()
