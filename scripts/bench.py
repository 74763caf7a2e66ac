"""gitswarm's performance figures, as ratios measured in the same run; prints one table.

- orchestration efficiency at C = 16, 64, 256: worker model calls per second over the ideal
  C / latency, with a fixed-latency fake model in another process, commits and merges included;
- engine / alone at the largest C: the engine's worker calls per second over those of C tasks
  making the same model calls with no engine (every call the engine's run made, as the fake
  servers received them, made again: the workers' by C tasks, the merger's one at a time beside
  them through the merger's client), the median of `--rounds` rounds run in turn (target 0.9);
  and the CPU per call of each. Each round also makes the worker calls alone (the baseline
  before 2026-12-07, which charged the merger's model calls to the engine), shown without a
  target;
- memory cost inside that run: Memory.contribute and compose per contribution vs raw pygit2;
- start-up: `gitswarm --help` and `gitswarm status` on a run of 100,000 commits;
- context economy: prompt tokens of an episode's first model call (real engine, scripted model)
  as one problem's memory grows from 10 to 10,000 contributions;
- footprint: peak RSS of the engine process at C = 256, against the same calls made again alone
  (target within 10%).

`--remote` measures a run on a git remote instead (scripts/bench_remote_run.py: the real CLI, a
coordinator with `--workers 0` and `gitswarm worker` processes over a `file://` bare remote):
- calls per second at C = 256 (`--remote-c`) with one worker process, against the local engine
  at the same C in the same run; two processes of C/2 each (the same total C) and two of C
  each (twice the C), against the one, with the most this machine's cores allow (`n/a` when
  that is below the target: the coordinator and the fake servers leave too little beside one
  worker that uses a whole core);
- git's cost per episode at that C and at a low C (`--remote-low`, 8): pushes, fetches and
  ls-remotes of the workers and of the coordinator (from git's own trace), and the seconds
  they took against a plain `git push` of one ref (bench_remote.plain_push).

Usage: python scripts/bench.py [--quick] [--sizes 16,64,256] [--latency 1] [--commits 100000]
       python scripts/bench.py --remote [--quick] [--remote-c 256] [--remote-low 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
Row = tuple[str, str, str, bool | str | None]
"""A figure, what it measured, its target, and PASS (True), FAIL (False), no target (None) or
why it cannot be judged on this machine (a word: `n/a`)."""


def orchestration(c: int, latency: float, per_worker: int, profile: bool, rounds: int = 1) -> dict:
    """One swarm of C workers and the baseline of model calls alone, `rounds` times in turn
    (engine, alone, alone, engine, engine, alone, ...: the machine's speed drifts, so each ratio
    pairs runs made side by side, each kind second in half the pairs); adds the efficiency
    figures to the first round's engine figures."""
    from bench_orchestration import requests_of, serving

    def port(url: str) -> str:
        return url.split(":")[-1].split("/")[0]

    def run(mode: str, *args: str, env: dict | None = None) -> dict:
        done = subprocess.run([sys.executable, str(HERE / "bench_orchestration.py"), mode, *args],
                              capture_output=True, text=True, timeout=900, env=env)
        if done.returncode != 0:  # its traceback, not only "returned non-zero exit status 1"
            raise SystemExit(f"bench_orchestration.py {mode} {' '.join(args)} exited with {done.returncode}:\n"
                             f"{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    paired = []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "arrivals"
        # The merger's model answers at once: its conflict calls run one at a time, so at 1 s
        # each they would add minutes of tail (reported below) and hide the workers' figure.
        merger_log = Path(tmp) / "merger"
        with serving(latency, log, requests=True) as url, \
                serving(0.0, merger_log, requests=True, every=True) as merger_url:

            def engine_run(n: int) -> tuple[dict, Path, Path]:
                """The engine's run, and the worker and merger calls it made (logged by the servers)."""
                engine = run("engine", str(c), port(url), port(merger_url), "--per-worker", str(per_worker),
                             *(["--profile"] if profile and n == 0 else []))
                arrivals = [float(t) for t, tools in (ln.split() for ln in log.read_text().splitlines())
                            if tools == "1" and float(t) >= engine["t0"]]
                _efficiency(engine, arrivals, c, latency)
                requests_of(merger_log).touch()  # a short run may make no merger call
                made = requests_of(log).rename(Path(tmp) / f"engine-{n}.requests")
                merged = requests_of(merger_log).rename(Path(tmp) / f"merger-{n}.requests")
                log.write_text("")
                return engine, made, merged

            def alone_run(made: Path, merged: Path) -> dict:
                """The baseline, same servers and latency: C tasks making an engine run's worker
                calls again (the messages, tools and tool choice the server received), and its
                merger's calls one at a time beside them, no engine; then the worker calls alone."""
                alone = run("bare", str(c), port(url), "--replay", str(made), "--merger", port(merger_url), str(merged))
                alone["workers_only"] = run("bare", str(c), port(url), "--replay", str(made))
                log.write_text("")
                requests_of(log).unlink(missing_ok=True)
                requests_of(merger_log).unlink(missing_ok=True)
                return alone

            # Rounds in the order engine, alone, alone, engine, engine, alone, ...: a drift of the
            # machine's speed over minutes favours the second run of a pair, so the pairs take
            # turns at being second. A round that runs alone first replays the last engine run's calls.
            for n in range(rounds):
                if n % 2 == 0:
                    engine, made, merged = engine_run(n)
                    paired.append((engine, alone_run(made, merged)))
                else:
                    alone = alone_run(made, merged)
                    engine, made, merged = engine_run(n)
                    paired.append((engine, alone))
            # What streaming costs per call: first-prompt calls, streamed and not; and litellm's own RSS.
            first = run("bare", str(c), port(url))
            unstreamed = run("bare", str(c), port(url), env={**os.environ, "BENCH_STREAM": "0"})
    figures = paired[0][0]
    figures["bare"], figures["bare_first"], figures["bare_unstreamed"] = paired[0][1], first, unstreamed
    figures["rounds"] = [{"ratio": e["calls_per_s"] / a["calls_per_s"],
                          "cpu_ratio": a["cpu_per_call"] / (e["cpu"] / max(e["calls"], 1)),
                          "ratio_workers": e["calls_per_s"] / a["workers_only"]["calls_per_s"],
                          "cpu_ratio_workers": a["workers_only"]["cpu_per_call"] / (e["cpu"] / max(e["calls"], 1)),
                          "cpu_ratio_no_git": a["cpu_per_call"] / ((e["cpu"] - e["git_cpu"]) / max(e["calls"], 1))}
                         for e, a in paired]
    return figures


def _efficiency(figures: dict, arrivals: list[float], c: int, latency: float) -> None:
    """Calls per second between the first worker call and the last episode's start (the
    swarm at full strength), over the ideal C / latency."""
    first, last = min(arrivals), figures["last_start"]
    in_window = sum(first <= t <= last for t in arrivals)
    figures["calls"] = len(arrivals)
    figures["efficiency"] = in_window / max(last - first, 1e-9) / (c / latency)
    figures["efficiency_whole"] = len(arrivals) * latency / (c * figures["wall"])
    figures["calls_per_s"] = in_window / max(last - first, 1e-9)


def timed(command: list[str], repeat: int = 5) -> float:
    """Median wall time of a command, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def startup(commits: int) -> list[Row]:
    from bench_history import add_history, new_run

    with tempfile.TemporaryDirectory() as tmp:
        build = time.perf_counter()
        memory = new_run(Path(tmp), 200)
        add_history(memory, commits, memory.problems(), ledger=True)
        build = time.perf_counter() - build
        python = timed([sys.executable, "-c", "pass"])
        rev_parse = timed(["git", "-C", str(memory.path), "rev-parse", "HEAD"])
        gitswarm = [sys.executable, "-m", "gitswarm"]
        helped = timed([*gitswarm, "--help"])
        status = timed([*gitswarm, "status", str(memory.path)], repeat=3)
    base = f"python -c pass {python:.3f} s, git rev-parse {rev_parse * 1000:.0f} ms"
    return [(f"start-up: gitswarm --help ({base})", f"{helped:.3f} s = {helped / python:.1f}x python",
             "<= 0.4 s", helped <= 0.4),
            (f"start-up: gitswarm status, {commits:,} commits (built in {build:.0f} s)",
             f"{status:.3f} s = {status / python:.1f}x python", "<= 0.5 s", status <= 0.5)]


def context_tokens(sizes: list[int]) -> tuple[list[Row], list[int]]:
    """Prompt tokens of an episode's first model call as one problem's memory grows: one real
    episode through the engine (scripted model, fake server, litellm) per memory size."""
    from bench_context import measure

    started = time.perf_counter()
    figures = measure(sizes)
    found = [f["tokens"] for f in figures]
    growth = found[-1] / found[0]
    shown = ", ".join(f"{f['size']:,}: {f['tokens']}" for f in figures)
    built = sum(f["build_s"] for f in figures)
    return [(f"context: first-call prompt tokens by memory size ({shown}; memories built in {built:.0f} s, "
             f"{time.perf_counter() - started:.0f} s in all)",
             f"{growth:.2f}x", "<= 1.2x", growth <= 1.2)], found


def orchestration_rows(results: list[dict], latency: float) -> list[Row]:
    rows: list[Row] = []
    for f in results:
        target = f["c"] == max(r["c"] for r in results)
        rows.append((f"orchestration C={f['c']}: {f['calls_per_s']:.1f} calls/s of ideal {f['c'] / latency:.0f} "
                     f"(whole run {f['efficiency_whole']:.2f}, {f['calls']} calls, {f['wall']:.0f} s, "
                     f"CPU {f['cpu_window']:.2f} cores)",
                     f"{f['efficiency']:.3f}", ">= 0.97" if target else "-",
                     f["efficiency"] >= 0.97 if target else None))
        bare, rounds = f["bare"], f["rounds"]
        ratio = statistics.median(r["ratio"] for r in rounds)
        spread = (f"median of {len(rounds)} pairs run in turn, {min(r['ratio'] for r in rounds):.2f}-"
                  f"{max(r['ratio'] for r in rounds):.2f}; CPU per call alone / in the engine "
                  f"{statistics.median(r['cpu_ratio'] for r in rounds):.2f}; " if len(rounds) > 1 else "")
        rows.append((f"  baseline C={f['c']}: the engine's {bare['calls']} worker calls and its merger's "
                     f"{bare['merger_calls']} made again alone, no engine: {bare['calls_per_s']:.1f} worker calls/s "
                     f"({bare['cpu_per_call'] * 1000:.1f} ms CPU per worker call in litellm's stack); "
                     f"{spread}engine / alone",
                     f"{ratio:.3f}", ">= 0.9" if target else "-", ratio >= 0.9 if target else None))
        workers = [r["ratio_workers"] for r in rounds]
        rows.append((f"  worker calls alone C={f['c']}: the same without the merger's calls, whose litellm CPU it "
                     f"charges to the engine: {bare['workers_only']['calls_per_s']:.1f} calls/s "
                     f"({bare['workers_only']['cpu_per_call'] * 1000:.1f} ms CPU per call); median of {len(workers)} "
                     f"({min(workers):.2f}-{max(workers):.2f}); CPU per call alone / in the engine "
                     f"{statistics.median(r['cpu_ratio_workers'] for r in rounds):.2f}; engine / alone",
                     f"{statistics.median(workers):.3f}", "-", None))
        if target:
            rows.append(_without_git(f, rounds))
        flat, streamed = f["bare_unstreamed"]["cpu_per_call"], f["bare_first"]["cpu_per_call"]
        rows.append((f"  streaming C={f['c']}: CPU per first-prompt call alone, streamed {streamed * 1000:.1f} ms, "
                     f"not streamed "
                     f"{flat * 1000:.1f} ms; in the engine {f['cpu'] / max(f['calls'], 1) * 1000:.1f} ms per worker "
                     "call (streamed); streamed / not", f"{streamed / flat:.2f}x", "-", None))
    big = results[-1]
    footprint = big["rss_mb"] / max(big["bare"]["rss_mb"], 1)  # the same calls, with and without the engine
    if big["contribute"] is None:  # from store.WRITER_FROM in flight the writer process makes them
        rows += [(f"memory in run (C={big['c']}): contribute and compose made by the writer process "
                  "(memory/writer.py), not timed here; bench_memory.py times them", "n/a", "-", None)]
    else:
        contribute, compose = big["contribute"] / big["raw_write"], big["compose_total"] / max(big["merged"], 1)
        rows += [(f"memory in run (C={big['c']}): contribute {big['contribute'] * 1000:.2f} ms vs raw pygit2 "
                  f"{big['raw_write'] * 1000:.2f} ms", f"{contribute:.2f}x", "<= 1.5x", contribute <= 1.5),
                 (f"memory in run: compose per merged contribution ({big['merged']} merged)",
                  f"{compose * 1000:.2f} ms = {compose / big['raw_write']:.2f}x raw", "< 2 ms", compose < 0.002)]
    rows += [(f"footprint: peak RSS of the engine at C={big['c']}, {big['rss_mb']:.0f} MB, against the engine's calls "
              f"made again alone, no engine: {big['bare']['rss_mb']:.0f} MB (first-prompt calls alone: "
              f"{big['bare_first']['rss_mb']:.0f} MB, litellm's floor)", f"{footprint:.2f}x", "<= 1.1x",
              footprint <= 1.1)]
    return rows


def _without_git(f: dict, rounds: list[dict]) -> Row:
    """The row of CPU per call alone / in the engine less its git thread's CPU: what taking git
    off the engine's core (a git writer in a process of its own, say) could give at most; a
    bound, not a measured engine."""
    calls = max(f["calls"], 1)
    ratios = [r["cpu_ratio_no_git"] for r in rounds]
    return (f"  without git C={f['c']}: the engine's CPU per worker call {f['cpu'] / calls * 1000:.1f} ms, of it "
            f"its git thread's {f['git_cpu'] / calls * 1000:.1f} ms ({f['git_sys'] / calls * 1000:.1f} system); "
            f"CPU per call alone / the rest, median of {len(ratios)} ({min(ratios):.2f}-{max(ratios):.2f}): the most "
            "git off the engine's core could give", f"{statistics.median(ratios):.3f}", "-", None)


def remote_rows(c: int, low: int, latency: float, per_worker: int) -> list[Row]:
    """The remote section (module docstring); each run on a fresh remote, all in this run."""
    from bench_remote import plain_push
    from bench_remote_run import run

    local = orchestration(c, latency, per_worker, False)["calls_per_s"]
    one, split, double, few = (run(slots, latency, per_worker) for slots in ([c], [c // 2] * 2, [c] * 2, [low]))
    with tempfile.TemporaryDirectory() as tmp:
        remote = Path(tmp) / "plain.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        floor = plain_push(remote.as_uri(), Path(tmp) / "mirror.git", 8)

    def cores(f: dict) -> str:
        return ", ".join(f"{role} {used:.2f}" for role, used in sorted(f["cpu"].items()))

    def calls(f: dict, what: str) -> str:
        total = sum(f["slots"])
        return (f"remote C={total}, {what}: {f['calls_per_s']:.1f} calls/s of ideal {total / latency:.0f} "
                f"(start-up {f['start_up_s']:.0f} s, {f['episodes']} episodes; cores in the window: {cores(f)})")

    rows: list[Row] = [
        (calls(one, f"one worker process of C={c}") + f"; the local engine at C={c}: {local:.1f} calls/s",
         f"{one['calls_per_s'] / local:.2f}x local", "-", None)]
    for f, what in ((split, f"two worker processes of C={c // 2} (the same total C)"),
                    (double, f"two worker processes of C={c} (twice the C)")):
        ratio, bound = f["calls_per_s"] / one["calls_per_s"], core_bound(one, f)
        shown = ratio >= 1.8 if bound >= 1.8 else "n/a"
        rows.append((calls(f, what) + f"; the cores left to its workers here allow at most {bound:.2f}x",
                     f"{ratio:.2f}x one", ">= 1.8x", shown))
    return [*rows, git_row(one, floor, target=True), git_row(few, floor, target=False)]


def core_bound(one: dict, two: dict) -> float:
    """The most that two worker processes could make of one's calls/s on this machine: its
    cores less what the coordinator and the fake servers used in the two-process run, over the
    cores the one worker used. Below 1.8 the target cannot be shown here (`n/a`): one worker
    of a high C already uses a whole core."""
    others = sum(used for role, used in two["cpu"].items() if not role.startswith("w"))
    return (os.cpu_count() - others) / max(one["cpu"].get("w0", 0.0), 1e-9)


def git_row(f: dict, floor: float, target: bool) -> Row:
    """Pushes and fetches per episode of one remote run, and their seconds in plain pushes;
    the target (below one push per episode) is batching's, so it holds at a high C only."""
    episodes = max(f["episodes"], 1)

    def per(who: str) -> str:
        counts = f["git"][who]["counts"]
        return "/".join(f"{counts.get(k, 0) / episodes:.2f}" for k in ("push", "fetch", "ls-remote"))

    seconds = sum(f["git"]["workers"]["seconds"].values()) / episodes
    pushes = f["git"]["workers"]["counts"].get("push", 0) / episodes
    slots = "+".join(map(str, f["slots"]))
    return (f"remote git per episode at C={slots}: push/fetch/ls-remote per episode, workers {per('workers')}, "
            f"coordinator {per('coordinator')}; workers' git {seconds * 1000:.0f} ms per episode = "
            f"{seconds / floor:.2f} plain pushes of one ref ({floor * 1000:.0f} ms)",
            f"{pushes:.3f} pushes/ep", "< 1" if target else "-", pushes < 1 if target else None)


def print_table(rows: list[Row]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':{width}}  {'measured':>28}  {'target':>9}  result")
    for name, value, target, ok in rows:
        shown = ok if isinstance(ok, str) else "-" if ok is None else "PASS" if ok else "FAIL"
        print(f"{name:{width}}  {value:>28}  {target:>9}  {shown}")


def print_diagnostics(results: list[dict]) -> None:
    for f in results:
        print(f"\nC={f['c']}: {f['reason']}; charged {f['charged']}; engine CPU {f['cpu']:.1f} s over "
              f"{f['wall']:.1f} s wall = {f['cpu'] / max(f['calls'], 1) * 1000:.1f} ms CPU per worker call; "
              f"git thread busy {f['git_busy']:.1f} s ({f['git_cpu']:.1f} s CPU, {f['git_sys']:.1f} s system) in "
              f"{f['git_calls']} calls, queue wait p50 {f['git_queue_p50'] * 1000:.1f} ms, "
              f"max {f['git_queue_max'] * 1000:.0f} ms; the writer process (memory/writer.py, its own "
              f"core) {f.get('writer_cpu', 0.0) / max(f['calls'], 1) * 1000:.1f} ms CPU per worker call")
        for who, run, calls in (("engine", f, f["calls"]), ("alone", f["bare"], f["bare"]["calls"])):
            usage, gc = run["rusage"], run["gc"]
            collected = ", ".join(f"{n} x gen{g} {s * 1000 / calls:.2f} ms" for g, (n, s) in
                                  enumerate(zip(gc["count"], gc["seconds"], strict=True)))
            print(f"    {who}: per worker call {usage['user'] / calls * 1000:.1f} ms user, "
                  f"{usage['sys'] / calls * 1000:.1f} ms system, {usage['voluntary'] / calls:.1f} voluntary and "
                  f"{usage['involuntary'] / calls:.1f} involuntary context switches; garbage collector: {collected}")
        for name, seconds, calls, cpu in f["git_by_fn"]:
            print(f"    git thread {seconds:6.2f} s ({cpu:6.2f} s CPU)  {calls:5} x {name}")
        for package, seconds in f.get("profile", []):
            print(f"    {seconds:7.2f} s  {package}")
        for name, own, cumulative, calls in f.get("profile_functions", []):
            print(f"    {own * 1000 / max(f['calls'], 1):6.2f} ms own per worker call  {cumulative:7.2f} s cum  "
                  f"{calls:7} x {name}")


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--sizes", default="16,64,256", help="concurrencies C to measure")
    cli.add_argument("--latency", type=float, default=1.0, help="seconds per fake model call")
    cli.add_argument("--per-worker", type=int, default=4, help="episodes per worker (budget = C x this)")
    cli.add_argument("--commits", type=int, default=100_000, help="commits of the start-up run")
    cli.add_argument("--context", default="10,100,1000,10000", help="memory sizes of the context figure")
    cli.add_argument("--profile", action="store_true", help="profile each C by package and by function")
    cli.add_argument("--rounds", type=int, default=3,
                     help="engine and model-calls-alone pairs at the largest C; the ratio is their median (--quick: 1)")
    cli.add_argument("--quick", action="store_true", help="small everything: C=8,32, 5,000 commits")
    cli.add_argument("--remote", action="store_true", help="the remote-run section instead (see above)")
    cli.add_argument("--remote-c", type=int, default=256, help="C of the remote section's runs")
    cli.add_argument("--remote-low", type=int, default=8, help="the low C of the remote git figure")
    args = cli.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if args.remote:
        c, per_worker = (32, 2) if args.quick else (args.remote_c, args.per_worker)
        started = time.monotonic()
        print_table(remote_rows(c, 4 if args.quick else args.remote_low, args.latency, per_worker))
        print(f"\nwhole bench: {time.monotonic() - started:.0f} s on {os.cpu_count()} cores")
        return
    if args.quick:
        args.sizes, args.per_worker, args.commits, args.context, args.rounds = "8,32", 3, 5000, "10,1000", 1
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.monotonic()
    results = [orchestration(c, args.latency, args.per_worker, args.profile,
                             args.rounds if c == max(sizes) else 1) for c in sizes]
    rows = orchestration_rows(results, args.latency)
    rows += startup(args.commits)
    rows += context_tokens([int(s) for s in args.context.split(",")])[0]
    print_table(rows)
    print_diagnostics(results)
    print(f"\nwhole bench: {time.monotonic() - started:.0f} s on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
