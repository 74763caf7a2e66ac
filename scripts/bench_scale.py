"""A run of the paper's scale on one machine: N problems x B episodes, the real engine in one
process against the scripted model behind the fake server (in another process: the model is
remote in real use, so its CPU is not ours), end to end; then the same shape split over
`gitswarm worker` processes on a `file://` git remote (docs/many-machines.md's recipe, through
the real CLI: bench_remote_run.py).

Prints, for the run in one process:
- the engine's CPU per episode over the first and the last `--window` episodes to end (the
  process's CPU between the window's first and last episode end, over the episodes in it):
  flat when the work per episode does not grow with the run;
- the run's repository on disk, its commits on main and refs;
- `gitswarm status RUN` (its own process: wall and CPU) and a dashboard refresh at the end
  (`tui.reader.Snapshots.read`: the first read, then one more with its index kept);
- the engine process's peak RSS.
And for the split run: its wall time, calls per second, the wall and the CPU of every process
per episode taken in over the first and the last `--window` of the steady run (after the first C
taken in, before the last start: `split`), the wall per episode of every window in between (flat
when nothing grows with the run), the CPU seconds of each process and the remote at the end.

    python scripts/bench_scale.py --problems 50 --per-problem 500 --workers 250   # the paper's 25,000
    python scripts/bench_scale.py --no-local --split 2    # the same shape split, alone
    python scripts/bench_scale.py --problems 4 --per-problem 6 --workers 4 --split 2 --window 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from bench_history import write_set
from bench_orchestration import serving

ENDED = ("committed", "nominated", "abstain", "failed")
"""The events of an episode's end (bench_remote_run.ENDED)."""


async def one_process(root: Path, problems: int, per_problem: int, workers: int, latency: float,
                      window: int) -> dict:
    """The run in this process; the CPU clock at each episode's end, and the run's folder. Every
    `window` episodes it prints a progress line to stderr (episodes, wall, the CPU per episode over
    that window, RSS), so a run stopped before its end still says how its cost moved."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.run import solve
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.models.lib import litellm_module
    from gitswarm.problems.loader import load_set

    litellm_module()  # a one-off import of seconds, not the engine's work per episode
    folder = write_set(root / "set", problems)
    ended: list[float] = []
    calls_at: list[int] = []  # the model calls ended (every attempt of each, the merger's too) at each episode's end
    calls = 0
    began = time.monotonic()

    def listener(event) -> None:
        nonlocal calls
        if event.kind == "reply":
            calls += 1
        elif event.kind in ENDED:
            ended.append(time.process_time())
            calls_at.append(calls)
            if len(ended) % window == 0 and len(ended) > window:
                cpu = (ended[-1] - ended[-window - 1]) * 1000
                per_call = cpu / max(1, calls_at[-1] - calls_at[-window - 1])
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                print(f"{len(ended):,} episodes, {time.monotonic() - began:.0f} s: engine CPU {cpu / window:.1f} ms "
                      f"per episode, {per_call:.1f} ms per model call over the last {window:,}, peak RSS "
                      f"{rss:.0f} MB", file=sys.stderr, flush=True)

    # The scripted model attempts again where it would abstain: with nothing settling (nominations
    # are never enough), a model that waits for others would end the run by the no-progress rule.
    with serving(latency, root / "arrivals", persist=True) as url, serving(0.0, root / "merger") as merger_url:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=url, api_key="k", reply_timeout_s=300)
        merger = ModelConfig(model="openai/gitswarm-scripted", api_base=merger_url, api_key="k", reply_timeout_s=300)
        cfg = SolveConfig(problems=folder, run=root / "run", model=config.model, workers=workers,
                          budget=problems * per_problem, settle_nominations=10**6, seed=1)
        started, cpu0 = time.monotonic(), time.process_time()
        result = await solve(cfg, load_set(folder), LiteLLMModel(config), LiteLLMModel(merger), [listener])
        wall, cpu = time.monotonic() - started, time.process_time() - cpu0
    return {"run": str(cfg.run), "ended": ended, "calls_at": calls_at, "wall": wall, "cpu": cpu,
            "charged": result.charged, "reason": str(result.reason),
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def per_episode(ended: list[float], calls_at: list[int], window: int) -> tuple[float, float, float, float, int]:
    """CPU ms per episode and per model call over the first and the last `window` episode ends
    (fewer in a small run): (per episode first, last, per call first, last, window). An episode's
    calls vary with what it does (an attempt, a review), the cost of a call does not."""
    n = max(2, min(window, len(ended) // 2))

    def rates(first: int, last: int) -> tuple[float, float]:
        cpu = (ended[last] - ended[first]) * 1000
        return cpu / (last - first), cpu / max(1, calls_at[last] - calls_at[first])

    (episode_first, call_first), (episode_last, call_last) = rates(0, n - 1), rates(len(ended) - n, len(ended) - 1)
    return episode_first, episode_last, call_first, call_last, n


def repository(run: Path) -> dict:
    size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
    commits = subprocess.run(["git", "-C", str(run), "rev-list", "--count", "main"], capture_output=True,
                             text=True, check=True).stdout.strip()
    refs = subprocess.run(["git", "-C", str(run), "for-each-ref"], capture_output=True, text=True,
                          check=True).stdout.count("\n")
    return {"mb": size / 1e6, "commits_on_main": int(commits), "refs": refs}


def status_time(run: Path) -> tuple[float, float]:
    """`gitswarm status RUN` in its own process: (wall, CPU) seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gitswarm", "status", str(run)], capture_output=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def dashboard_times(run: Path) -> tuple[float, float]:
    """A dashboard's first read of the run and its next refresh (index kept), in seconds."""
    from gitswarm.memory.repo import Memory
    from gitswarm.tui.reader import Snapshots

    memory, snapshots = Memory(run), Snapshots()
    started = time.perf_counter()
    snapshots.read(memory)
    first = time.perf_counter() - started
    started = time.perf_counter()
    snapshots.read(memory)
    return first, time.perf_counter() - started


def split(problems: int, per_problem: int, workers: int, processes: int, latency: float, window: int) -> dict:
    """The same shape over `processes` worker processes on a git remote (bench_remote_run), with
    the wall and CPU seconds per episode the coordinator took in over the first and the last
    `window` of the steady run (the run's CPU is spread over its processes and their git: its
    pace is what stays flat or not), and the wall per episode of every `window` in between.

    Steady: after the first C episodes taken in, before the last episode started. The first C
    start together and end together: they come in tens of milliseconds apart, their work done
    before the window that takes them in begins; after the last start the swarm drains, fewer
    in flight each second. Either would make the first window cheap or the last dear for
    reasons that are not the run's size."""
    from bench_remote_run import run

    slots = [workers // processes] * processes
    per_worker = max(1, round(problems * per_problem / sum(slots)))
    figures = run(slots, latency, per_worker, problems=problems, timeout=12 * 3600)
    taken, cpu_at = sorted(figures["taken_at"]), figures["cpu_at"]
    steady = [t for t in taken[sum(slots):] if t <= figures["last_start"]] or taken
    n = max(2, min(window, len(steady) // 2))
    first, last = (steady[n - 1] - steady[0]) / (n - 1), (steady[-1] - steady[-n]) / (n - 1)
    blocks = [round(1000 * (b[-1] - b[0]) / (len(b) - 1), 1)
              for b in (steady[i:i + n] for i in range(0, len(steady), n)) if len(b) == n]

    def cpu(start: float, end: float) -> dict[str, float]:  # each role's CPU seconds between two times
        def at(t: float) -> dict[str, float]:
            return min(cpu_at, key=lambda sample: abs(sample[0] - t))[1]
        before, after = at(start), at(end)
        return {role: after[role] - before.get(role, 0.0) for role in after}

    def per_episode(start: float, end: float) -> dict[str, float]:
        return {role: round(1000 * used / (n - 1), 1) for role, used in sorted(cpu(start, end).items())}
    first_roles, last_roles = per_episode(steady[0], steady[n - 1]), per_episode(steady[-n], steady[-1])
    return {**{k: figures[k] for k in ("slots", "wall", "start_up_s", "calls", "calls_per_s", "episodes", "charged",
                                       "reason", "cpu_s", "remote_refs", "remote_objects", "remote_gc_log",
                                       "plain_push_ms", "git")},
            "steady": len(steady), "wall_ms_per_episode_by_window": blocks,
            "wall_ms_per_episode_first": 1000 * first, "wall_ms_per_episode_last": 1000 * last,
            "cpu_ms_per_episode_first": sum(first_roles.values()), "cpu_ms_per_episode_last": sum(last_roles.values()),
            "cpu_ms_per_episode_by_process": {"first": first_roles, "last": last_roles}, "window": n}


def in_one_process(root: Path, args: argparse.Namespace) -> dict:
    """The run in this process, and its figures (module docstring), printed as it ends."""
    local = anyio.run(one_process, root, args.problems, args.per_problem, args.workers, args.latency, args.window)
    first, last, call_first, call_last, n = per_episode(local["ended"], local["calls_at"], args.window)
    run = Path(local["run"])
    status_wall, status_cpu = status_time(run)
    read, refresh = dashboard_times(run)
    figures = {"episodes": len(local["ended"]), "charged": local["charged"], "reason": local["reason"],
               "wall_s": local["wall"], "engine_cpu_s": local["cpu"],
               "cpu_ms_per_episode_first": first, "cpu_ms_per_episode_last": last,
               "cpu_ms_per_call_first": call_first, "cpu_ms_per_call_last": call_last, "window": n,
               "repository": repository(run), "status_s": status_wall, "status_cpu_s": status_cpu,
               "dashboard_first_read_s": read, "dashboard_refresh_s": refresh, "peak_rss_mb": local["rss_mb"]}
    print(f"one process: {figures['episodes']:,} episodes ({args.problems} x {args.per_problem}, C={args.workers}) "
          f"in {local['wall']:.0f} s; engine CPU per episode {first:.1f} ms over the first {n}, {last:.1f} ms "
          f"over the last {n} (x{last / max(first, 1e-9):.2f}); per model call {call_first:.1f} ms, then "
          f"{call_last:.1f} ms (x{call_last / max(call_first, 1e-9):.2f})")
    repo = figures["repository"]
    print(f"repository {repo['mb']:.1f} MB, {repo['commits_on_main']:,} commits on main, {repo['refs']:,} refs; "
          f"status {status_wall:.2f} s ({status_cpu:.2f} s CPU); dashboard first read {read:.2f} s, "
          f"refresh {refresh:.3f} s; peak RSS {local['rss_mb']:.0f} MB")
    return figures


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--problems", type=int, default=50, help="N problems")
    cli.add_argument("--per-problem", type=int, default=500, help="B episodes per problem (budget N x B)")
    cli.add_argument("--workers", type=int, default=250, help="episodes in flight (C)")
    cli.add_argument("--latency", type=float, default=0.0, help="seconds per fake model call")
    cli.add_argument("--window", type=int, default=1000, help="episodes in the first and the last window")
    cli.add_argument("--split", type=int, default=2, help="worker processes of the remote run (0: none)")
    cli.add_argument("--keep", type=Path, help="keep the one-process run in this folder")
    cli.add_argument("--local", action=argparse.BooleanOptionalAction, default=True,
                     help="the run in one process (--no-local: the split run alone)")
    args = cli.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    figures: dict = {"problems": args.problems, "per_problem": args.per_problem, "workers": args.workers}
    if args.local:
        figures |= in_one_process(root, args)
    if args.split:
        figures["split"] = s = split(args.problems, args.per_problem, args.workers, args.split, args.latency,
                                     args.window)
        print(f"split over {args.split} worker processes on a git remote: {s['episodes']:,} episodes in "
              f"{s['wall']:.0f} s, {s['calls_per_s']:.1f} model calls/s; wall per episode taken in "
              f"{s['wall_ms_per_episode_first']:.1f} ms over the first {s['window']}, "
              f"{s['wall_ms_per_episode_last']:.1f} ms over the last "
              f"(x{s['wall_ms_per_episode_last'] / max(s['wall_ms_per_episode_first'], 1e-9):.2f}); CPU of every "
              f"process per episode {s['cpu_ms_per_episode_first']:.1f} ms, then {s['cpu_ms_per_episode_last']:.1f} ms "
              f"(x{s['cpu_ms_per_episode_last'] / max(s['cpu_ms_per_episode_first'], 1e-9):.2f}); "
              f"CPU s {s['cpu_s']}; the remote's refs {s['remote_refs']:,}")
        print(f"  steady: {s['steady']:,} episodes (after the first {args.workers} taken in, before the last start); "
              f"wall ms per episode by window of {s['window']}: {s['wall_ms_per_episode_by_window']}")
        for when, roles in s["cpu_ms_per_episode_by_process"].items():
            print(f"  CPU ms per episode over the {when} {s['window']}, by process (with its git): "
                  + ", ".join(f"{role} {ms:.1f}" for role, ms in roles.items()))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
