"""gitswarm's reliability and security evidence; prints one table per check.

- kill: `gitswarm solve` (scripted model behind a fake server) SIGKILLed at random instants,
  resumed each time, to completion; invariants checked after every kill and at the end;
- flaky: 20% of calls fail with every fault kind the fake server has;
- gitgc: `git gc --auto`, `git pack-refs --all` and a `git log` reader loop while C=64 write;
- hidden: after a full run on every shipped set, every object is scanned for hidden texts;
- hostile: attacking agents (paths, floods, encodings, injected instructions, secrets).

Usage: python scripts/chaos.py [kill flaky gitgc hidden hostile] [--kills 20] [--seed 1]
       [--budget 60] [--workers 64] [--sets demo,answers,imo,programs] [--big-mb 50] [--many-files 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from bench_history import write_set
from bench_orchestration import serving

from gitswarm.demo import audit
from gitswarm.demo.brain import respond
from gitswarm.fakeserver import FAULTS, FaultPlan, serve
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

SHIPPED = ("demo", "answers", "imo", "programs")


def table(title: str, rows: list[tuple[str, object]]) -> None:
    print(f"\n== {title}")
    for name, value in rows:
        print(f"  {name:44} {value}")


async def run_inprocess(problems: Path, run: Path, responder=respond, faults: FaultPlan | None = None,
                        timeout_s: float = 2.0, limit_s: float = 600, **options):
    """The real engine in this process against the fake server; returns (result, server)."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.run import solve
    from gitswarm.models import LiteLLMModel, ModelConfig

    async with serve(responder, faults) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=timeout_s, backoff_base_s=0.01, backoff_cap_s=0.05)
        model = LiteLLMModel(config)
        problem_set = load_set(problems)
        cfg = SolveConfig.for_set(problem_set, run, model=config.model, **options)
        with anyio.fail_after(limit_s):
            return await solve(cfg, problem_set, model, model), server


# -- kill anywhere ---------------------------------------------------------------------------

def solve_process(problems: Path, run: Path, url: str, budget: int) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_API_KEY": "k"}
    return subprocess.Popen([sys.executable, "-m", "gitswarm", "solve", str(problems), "--run", str(run),
                             "-m", "openai/gitswarm-scripted", "--api-base", url, "--workers", "8", "-B", str(budget),
                             "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def invariants(run: Path, seen: set[str], mains: list[str], budget: int) -> dict[str, int]:
    """Lost commits, duplicated ops, budget overrun, backward moves of main, fsck findings."""
    now = audit.reachable(run)
    main = audit.git(run, "rev-parse", "main").strip()
    return {"lost": len(seen - now), "duplicated": audit.duplicated(run),
            "over_budget": max(0, audit.charged(run) - budget),
            "backward": sum(not audit.is_ancestor(run, old, main) for old in mains),
            "fsck": len(audit.fsck_problems(run))}


def kill_anywhere(kills: int, latency: float, budget: int, seed: int) -> bool:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp, serving(latency, Path(tmp) / "arrivals") as url:
        problems = write_set(Path(tmp) / "set", 12)
        start = time.monotonic()
        reference = solve_process(problems, Path(tmp) / "ref", url, budget)
        _, error = reference.communicate(timeout=900)
        if reference.returncode != 0:  # a run that cannot even start says why, not a traceback later
            table("kill anywhere", [("the never-killed run exited", reference.returncode),
                                    ("its stderr", error.decode(errors="replace").strip()[-500:])])
            return False
        whole = time.monotonic() - start
        ref_charged = audit.charged(Path(tmp) / "ref")
        run, done, starts = Path(tmp) / "run", 0, 0
        seen: set[str] = set()
        mains: list[str] = []
        worst: dict[str, int] = {}
        latest = 3.0 + 2 * whole / kills  # start-up (imports) plus twice a fair share of the run
        while done < kills:
            process = solve_process(problems, run, url, budget)
            starts += 1
            try:
                process.wait(timeout=rng.uniform(0.3, latest))
                break  # finished before this kill
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
                done += 1
            if (run / "HEAD").exists():
                found = invariants(run, seen, mains, budget)
                worst = {k: max(v, worst.get(k, 0)) for k, v in found.items()}
                seen |= audit.reachable(run)
                mains.append(audit.git(run, "rev-parse", "main").strip())
        final = solve_process(problems, run, url, budget)
        code = final.wait(timeout=900)
        end = invariants(run, seen, mains, budget)
        worst = {k: max(v, worst.get(k, 0)) for k, v in end.items()}
        contributions = sum(1 for op in audit.ops(run) if op.endswith("-final"))
        rows = [(f"kills (SIGKILL at random instants in 0.3-{latest:.1f} s)", done), ("resumes", starts),
                ("exit code of the final resume", code), ("contributions + nominations", contributions),
                ("charged: killed run / never-killed run", f"{audit.charged(run)} / {ref_charged} (B={budget})"),
                ("lost commits (max over checks)", worst["lost"]),
                ("duplicated ops (max over checks)", worst["duplicated"]),
                ("budget overrun (max)", worst["over_budget"]), ("main moved backwards", worst["backward"]),
                ("fsck findings (max)", worst["fsck"]),
                ("unmerged branches at the end", len(audit.git(run, "branch", "--list", "swarm/*").split()))]
        table(f"kill anywhere ({whole:.0f} s per unkilled run)", rows)
        return code == 0 and not any(worst.values()) and audit.charged(run) == ref_charged


# -- flaky provider ---------------------------------------------------------------------------

def flaky(seed: int) -> bool:
    async def go():
        with tempfile.TemporaryDirectory() as tmp:
            plan = FaultPlan(rate=0.2, kinds=tuple(FAULTS), seed=seed, retry_after_s=0)
            problems = write_set(Path(tmp) / "set", 6)
            result, server = await run_inprocess(problems, Path(tmp) / "run", faults=plan, workers=8,
                                                 budget=40, max_steps=16)
            run = Path(tmp) / "run"
            statuses = audit.git(run, "log", "--format=%s", "refs/gitswarm/ledger").split("\n")
            failed = sum(" failed" in s for s in statuses)
            rows = [("requests / faults injected", f"{len(server.requests)} / {sum(server.injected.values())}"),
                    ("faults by kind", dict(server.injected)), ("end", result.reason),
                    ("charged / episodes / failed records", f"{result.charged} / {result.episodes} / {failed}"),
                    ("tokens (ledger)", result.tokens), ("duplicated ops", audit.duplicated(run)),
                    ("fsck findings", len(audit.fsck_problems(run)))]
            table("flaky provider (20% faults, all kinds)", rows)
            return result.charged == 40 and not audit.duplicated(run) and not audit.fsck_problems(run)
    return anyio.run(go)


# -- concurrent git ---------------------------------------------------------------------------

async def _loop(argv: list[str], stop: anyio.Event, counts: dict[str, list[int]], name: str) -> None:
    while not stop.is_set():
        done = await anyio.run_process(argv, check=False)
        counts.setdefault(name, [0, 0])[done.returncode != 0] += 1
        await anyio.sleep(0.05)


def concurrent_git(workers: int) -> bool:
    async def go():
        with tempfile.TemporaryDirectory() as tmp:
            run, problems = Path(tmp) / "run", write_set(Path(tmp) / "set", 16)
            counts: dict[str, list[int]] = {}
            stop = anyio.Event()
            g = ["git", "-C", str(run)]
            loops = {"gc --auto": [*g, "-c", "gc.auto=20", "-c", "gc.autoPackLimit=2", "-c", "gc.autoDetach=false",
                                   "gc", "--auto", "--quiet"],
                     "pack-refs --all": [*g, "pack-refs", "--all"], "log reader": [*g, "log", "--all", "--oneline"]}
            error = None
            async with anyio.create_task_group() as tg:
                async def swarm():
                    nonlocal error
                    try:
                        return await run_inprocess(problems, run, faults=FaultPlan(latency_s=0.05),
                                                   workers=workers, budget=workers * 3, settle_nominations=10**6)
                    except Exception as exc:  # the figure: any error that reaches the user
                        error = repr(exc)
                    finally:
                        stop.set()
                tg.start_soon(swarm)
                while not (run / "HEAD").exists() and not stop.is_set():
                    await anyio.sleep(0.05)
                for name, argv in loops.items():
                    tg.start_soon(_loop, argv, stop, counts, name)
            ledger_commits = audit.git(run, "log", "--format=%b", "refs/gitswarm/ledger")
            rows = [("error reaching the user", error or "none"), ("charged", audit.charged(run)),
                    *((f"{name}: runs ok / failed", f"{ok} / {bad}") for name, (ok, bad) in counts.items()),
                    ("duplicated ops", audit.duplicated(run)), ("fsck findings", len(audit.fsck_problems(run))),
                    ("ledger commits", ledger_commits.count("\n"))]
            table(f"concurrent git (C={workers})", rows)
            return error is None and not audit.duplicated(run) and audit.charged(run) == workers * 3
    return anyio.run(go)


# -- hidden data ------------------------------------------------------------------------------

def hidden(sets: tuple[str, ...] = SHIPPED) -> bool:
    async def go():
        leaks_all = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name in sets:
                folder = resolve_set(name)
                run = Path(tmp) / name
                result, _ = await run_inprocess(folder, run, workers=4, budget=60)
                problem_set = load_set(folder)
                secrets = {p.id: p.hidden_texts() for p in problem_set.problems}
                leaks = audit.hidden_leaks(run, secrets, audit.public_text(problem_set))
                objects = len(audit.git(run, "cat-file", "--batch-all-objects", "--batch-check").splitlines())
                leaks_all[name] = (result.reason, objects, leaks)
        table("hidden data (every object of each run)",
              [(f"{name}: {reason}, {n} objects", f"{len(leaks)} leaks {leaks[:3]}")
               for name, (reason, n, leaks) in leaks_all.items()])
        return not any(v[2] for v in leaks_all.values())
    return anyio.run(go)


# -- hostile agents ---------------------------------------------------------------------------

def hostile(big_bytes: int, many_files: int) -> bool:
    from gitswarm.demo.hostile import Hostile, attacks, prompt_violations

    async def go(nul_content: bool):
        with tempfile.TemporaryDirectory() as tmp:
            problems = resolve_set("demo")  # outside /tmp, as a user's set would be
            secret = problems / "demo-divisors-36.md"
            responder = Hostile(attacks(big_bytes, many_files, str(secret), nul_content))
            result, server = await run_inprocess(problems, Path(tmp) / "run", responder, workers=2, verify=0, budget=8,
                                                 max_steps=20, timeout_s=60)
            hidden_lines = {ln.strip() for p in load_set(problems).problems for t in p.hidden_texts()
                            for ln in t.splitlines() if len(ln.strip()) >= 12}
            leaked = sorted({c for _, c, a in responder.results for ln in hidden_lines if ln in a})
            bad = prompt_violations(server.requests, lambda e: e in responder.plans)
            rows = [("run ended", result.reason), ("hidden text read through a tool", leaked or "none"),
                    ("injected text outside the fence in others' prompts", len(bad))]
            rows += [(f"  outside the fence #{n}", line) for n, line in enumerate(bad[:8], 1)]
            table("hostile agents (tool answers to each attack)", attack_rows(responder.results) + rows)
            return not leaked and not bad

    try:
        survived = anyio.run(go, True)
    except Exception as exc:  # the finding: an error of the whole run
        cause = exc.exceptions[0] if isinstance(exc, BaseExceptionGroup) else exc
        while isinstance(cause, BaseExceptionGroup):
            cause = cause.exceptions[0]
        table("hostile agents: a NUL byte in a file's content", [("the run died with", repr(cause))])
        survived = False
    return anyio.run(go, False) and survived


def attack_rows(results: list[tuple[str, str, str]]) -> list[tuple[str, object]]:
    """One row per distinct (call, answer) with numbers blurred: a flood shows as one row."""
    counts: dict[tuple[str, str], int] = {}
    for _, call, answer in results:
        first = answer.splitlines()[0][:110] if answer else ""
        key = (re.sub(r"\d+", "N", call[:44]), re.sub(r"\d+", "N", first))
        counts[key] = counts.get(key, 0) + 1
    return [(call if n == 1 else f"{call} x{n}", first) for (call, first), n in counts.items()]


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("checks", nargs="*", default=["kill", "flaky", "gitgc", "hidden", "hostile"])
    cli.add_argument("--kills", type=int, default=20)
    cli.add_argument("--budget", type=int, default=60, help="budget of the kill check's runs")
    cli.add_argument("--seed", type=int, default=1)
    cli.add_argument("--workers", type=int, default=64, help="C of the concurrent-git check")
    cli.add_argument("--sets", default=",".join(SHIPPED), help="the shipped sets the hidden check runs")
    cli.add_argument("--big-mb", type=float, default=50, help="size of the hostile agent's big file")
    cli.add_argument("--many-files", type=int, default=10_000, help="files of the hostile agent's flood")
    args = cli.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    checks = {"kill": lambda: kill_anywhere(args.kills, 0.1, args.budget, args.seed),
              "flaky": lambda: flaky(args.seed), "gitgc": lambda: concurrent_git(args.workers),
              "hidden": lambda: hidden(tuple(args.sets.split(","))),
              "hostile": lambda: hostile(int(args.big_mb * 2**20), args.many_files)}
    outcome = {name: checks[name]() for name in args.checks}
    print("\n" + "  ".join(f"{name}: {'PASS' if ok else 'FAIL'}" for name, ok in outcome.items()))
    sys.exit(0 if all(outcome.values()) else 1)


if __name__ == "__main__":
    main()
