"""The remote-run figures of bench.py: a coordinator (`gitswarm solve SET --run URL --workers 0`)
and `gitswarm worker` processes over a `file://` bare remote, the scripted model behind the
fake server in another process (bench_orchestration's `serving`), all through the real CLI.

Measured per run:
- worker model calls per second in the steady window, from the first model call to the last
  `episode_started` of any worker (after it the budget is spent and the swarm drains),
  counted from the fake server's log of arrivals, as bench.py's orchestration rows count them;
- the cores each process used in that window (its own CPU and that of the git processes it
  ran, from /proc), the fake servers' together; and each one's CPU seconds over the whole run
  (`cpu_s`: the coordinator's per episode is its cost of taking workers' episodes in);
- git's work over the transport: every `git push`, `git fetch` and `git ls-remote` each
  process ran, counted from git's own trace (`GIT_TRACE2_EVENT`: every git command logs its
  name and its parent's, so receive-pack and upload-pack count as part of theirs), and the
  seconds they took; per episode the coordinator took in;
- the remote at the end: its refs (`git for-each-ref`), its loose and packed objects (`git
  count-objects`), what its last automatic `git gc` left in `gc.log` (which stops the next
  for a day), and the seconds of a plain one-ref
  `git push` to it (`bench_remote.plain_push`), which grows with the refs the remote holds;
  with `--prune-batch N` passed on to the coordinator (0: nothing pruned).

`python scripts/bench_remote_run.py 256 128,128` runs one run with a worker of C=256, then
one with two workers of C=128 each, and prints each run's figures as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_history import write_set
from bench_orchestration import serving
from bench_remote import plain_push

MODEL = "openai/gitswarm-scripted"
TRANSPORT = ("push", "fetch", "ls-remote")
"""The git commands that talk to the remote."""
ENDED = ("committed", "nominated", "abstain", "failed")
"""The coordinator's events for an episode taken in."""


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitswarm", *args]


@contextmanager
def scratch() -> Iterator[Path]:
    """A temporary folder, removed again once the `git gc --auto` that a push or fetch may
    have left running in the background there has finished."""
    root = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    try:
        yield root
    finally:
        for _ in range(60):
            shutil.rmtree(root, ignore_errors=True)
            if not root.exists():
                break
            time.sleep(1)


def run(slots: list[int], latency: float, per_worker: int, problems: int = 0, prune: int | None = None,
        timeout: float = 1800) -> dict:
    """One run: a coordinator with `--workers 0` and one worker process per entry of `slots`
    (its C), budget = total C x `per_worker`; returns the figures (module docstring), with the
    time each episode was taken in (`taken_at`) and the CPU seconds of all the processes so far
    at each sample (`cpu_at`: time, seconds by role). A process still running after `timeout`
    seconds is killed and the run fails."""
    total = sum(slots)
    with scratch() as root:
        folder = write_set(root / "set", problems or max(4, total // 4))
        remote = root / "run.git"
        subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(remote)], check=True)
        (root / "gitswarm.toml").write_text("[solve]\nsettle_nominations = 1000000\n")  # as bench.py's runs
        env = {**os.environ, "OPENAI_API_KEY": "k", "GITSWARM_CONFIG": str(root / "gitswarm.toml"),
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        log = root / "arrivals"
        with serving(latency, log) as url, serving(0.0, root / "merger") as merger_url:
            started = time.time()
            commands = {"coordinator": cli("solve", str(folder), "--run", remote.as_uri(), "--mirror",
                                           str(root / "mirror"), "--workers", "0", "--budget",
                                           str(total * per_worker), "--model", MODEL, "--api-base", merger_url,
                                           "--seed", "1", "--no-tui", "--json",
                                           *(["--prune-batch", str(prune)] if prune is not None else []))}
            commands |= {f"w{i}": cli("worker", remote.as_uri(), "--model", MODEL, "--api-base", url,
                                      "--workers", str(c),
                                      "--name", f"w{i}", "--dir", str(root / f"w{i}"), "--patience", "120",
                                      "--json") for i, c in enumerate(slots)}
            cpu = _run_all(commands, env, root, timeout)
            wall = time.time() - started
            arrivals = [float(t) for t, tools in (ln.split() for ln in log.read_text().splitlines())
                        if tools == "1"]
        starts = [e["time"] for i in range(len(slots)) for e in _events(root / f"w{i}" / "gitswarm-events.jsonl")
                  if e["kind"] == "episode_started"]
        taken = _events(root / "mirror" / "gitswarm-events.jsonl")
        stopped = next(e["data"] for e in reversed(taken) if e["kind"] == "run_stopped")
        refs = len(subprocess.run(["git", "-C", str(remote), "for-each-ref"], capture_output=True, text=True,
                                  check=True).stdout.splitlines())
        objects = dict(line.split(": ", 1) for line in subprocess.run(
            ["git", "-C", str(remote), "count-objects", "-v"], capture_output=True, text=True,
            check=True).stdout.splitlines())
        gc_said = (remote / "gc.log").read_text().strip() if (remote / "gc.log").exists() else None
        push_s = plain_push(remote.as_uri(), root / "plain.git", 10)
        first, last = min(arrivals), max(starts)  # the steady window
        inside = sum(first <= t <= last for t in arrivals)
        return {"slots": slots, "latency": latency, "wall": wall, "start_up_s": first - started,
                "calls": len(arrivals), "window": last - first, "window_calls": inside,
                "calls_per_s": inside / max(last - first, 1e-9), "cpu": cpu.cores(first, last),
                "cpu_s": cpu.totals(),
                "episodes": sum(1 for e in taken if e["kind"] in ENDED), "charged": stopped["charged"],
                "taken_at": [e["time"] for e in taken if e["kind"] in ENDED],
                "last_start": last,
                "cpu_at": [(t, dict(used)) for t, used in cpu.samples],
                "reason": stopped["reason"], "prune": prune, "remote_refs": refs,
                "remote_objects": {k: int(objects[k]) for k in ("count", "in-pack", "packs")},
                "remote_gc_log": gc_said, "plain_push_ms": 1000 * push_s,
                "git": {"coordinator": _git([root / "trace-coordinator"]),
                        "workers": _git([root / f"trace-w{i}" for i in range(len(slots))])}}


def _run_all(commands: dict[str, list[str]], env: dict, root: Path, timeout: float) -> Sampler:
    """Start every process (each with its own git trace, its stderr to a file: a pipe nobody
    reads while another process is waited for would fill), wait for all (`timeout` seconds in
    all, from the start); their CPU samples."""
    errors = {role: root / f"{role}.stderr" for role in commands}
    processes = {}
    for role, command in commands.items():
        with errors[role].open("w") as err:
            processes[role] = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                               env={**env, "GIT_TRACE2_EVENT": str(root / f"trace-{role}")})
    deadline = time.monotonic() + timeout
    with Sampler({p.pid: role for role, p in processes.items()}) as cpu:
        try:
            for role, p in processes.items():
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
                if p.returncode != 0:
                    raise RuntimeError(f"{role} exited with {p.returncode}: {errors[role].read_text()[-2000:]}")
        finally:
            for p in processes.values():
                if p.poll() is None:
                    p.kill()
    return cpu


def _events(path: Path) -> list[dict]:
    """The events of a process's log; a line that is not whole (a process killed mid-write) is
    left out and said, as `engine.events.read_events` leaves it out, not the run's figures lost."""
    found, broken = [], 0
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            broken += bool(line.strip())
    if broken:
        print(f"{path}: {broken} line(s) not whole, left out", file=sys.stderr)
    return found


class Sampler:
    """CPU seconds of this process's children (the fake servers, the coordinator, the workers,
    and the git processes each has waited for), sampled twice a second from /proc, by role."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, roles: dict[int, str]) -> None:
        self.roles = roles
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            self.samples.append((time.time(), self._read()))

    def _read(self) -> dict[str, float]:
        found: dict[str, float] = defaultdict(float)
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                pid, rest = stat.read_text().split(" (", 1)
            except OSError:
                continue
            fields = rest.rsplit(") ", 1)[1].split()
            if int(pid) in self.roles or int(fields[1]) == os.getpid():  # ours, the fake servers among them
                role = self.roles.get(int(pid), "fake servers")
                found[role] += sum(int(f) for f in fields[11:15]) / self.TICK  # utime stime cutime cstime
        return found

    def totals(self) -> dict[str, float]:
        """CPU seconds each role used over the run, as last sampled while it lived (a process
        that exited is gone from /proc: up to half a second of it is not counted)."""
        found: dict[str, float] = {}
        for _, sample in self.samples:
            for role, used in sample.items():
                found[role] = max(found.get(role, 0.0), used)
        return found

    def cores(self, start: float, end: float) -> dict[str, float]:
        """Cores each role used between `start` and `end` (the nearest samples)."""
        first = min(self.samples, key=lambda s: abs(s[0] - start))
        last = min(self.samples, key=lambda s: abs(s[0] - end))
        span = max(last[0] - first[0], 1e-9)
        return {role: (last[1].get(role, 0.0) - first[1].get(role, 0.0)) / span for role in last[1]}


def _git(traces: list[Path]) -> dict:
    """How many transport commands the processes of `traces` ran, and their seconds, by command."""
    counts: Counter[str] = Counter()
    seconds: dict[str, float] = defaultdict(float)
    for trace in traces:
        names: dict[str, str] = {}
        for line in trace.read_text().splitlines() if trace.exists() else []:
            event = json.loads(line)
            if event["event"] == "cmd_name" and event["hierarchy"] in TRANSPORT:
                names[event["sid"]] = event["name"]
                counts[event["name"]] += 1
            elif event["event"] == "exit" and event["sid"] in names:
                seconds[names[event["sid"]]] += event["t_abs"]
    return {"counts": dict(counts), "seconds": dict(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("splits", nargs="+", help="one run per argument: the workers' C, comma-separated")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per fake model call")
    parser.add_argument("--per-worker", type=int, default=4, help="episodes per slot (budget = total C x this)")
    parser.add_argument("--prune-batch", type=int, nargs="*", default=[None],
                        help="one run per value for each split, passed to the coordinator (0: no pruning)")
    args = parser.parse_args()
    for split in args.splits:
        for prune in args.prune_batch:
            figures = run([int(c) for c in split.split(",")], args.latency, args.per_worker, prune=prune)
            print(json.dumps({k: v for k, v in figures.items() if k not in ("taken_at", "cpu_at")}), flush=True)


if __name__ == "__main__":
    main()
