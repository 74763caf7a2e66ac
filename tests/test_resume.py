"""Kill -9 at several instants and resume: nothing lost, nothing doubled, budget kept."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import fsck_clean, git

FINISHED = ("committed", "nominated")


def finished_events(run: Path) -> int:
    log = run / "gitswarm-events.jsonl"
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines()
               if line.endswith("}") and json.loads(line)["kind"] in FINISHED)


def demo(run: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gitswarm", "demo", "--run", str(run), "--latency",
                             "0.05", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stopped(run: Path) -> bool:
    """The event log's last start was followed by `run_stopped`: the run ended by itself."""
    kinds = [json.loads(line)["kind"] for line in (run / "gitswarm-events.jsonl").read_text().splitlines()
             if line.endswith("}")]
    starts = [i for i, kind in enumerate(kinds) if kind == "run_started"]
    return bool(starts) and "run_stopped" in kinds[starts[-1]:]


DEMO_BUDGET = 60
"""The demo set's budget (its set.toml [defaults])."""


def charged(run: Path) -> int:
    ledger = git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/ledger").split()
    statuses = [json.loads(git(run, "show", f"refs/gitswarm/ledger:{p}"))["status"]
                for p in ledger if p.startswith("episodes/")]
    return sum(s in ("contribute", "nominate") for s in statuses)


@pytest.mark.slow
def test_sigkill_at_several_points_then_resume_to_completion(tmp_path: Path):
    run = tmp_path / "run"
    seen: set[str] = set()
    mains: list[str] = []
    for kill_after in (1, 5, 9):  # 15 finished of the demo's ~25: each kill lands mid-run (1, 6, 14 let it end first)
        target = finished_events(run) + kill_after
        process = demo(run)
        deadline = time.monotonic() + 120
        while finished_events(run) < target and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process.poll() is None, "the run ended before the kill: nothing here would test a kill mid-run"
        assert finished_events(run) >= target, "the kill would land before the work it is meant to cut"
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
        assert not stopped(run), "the kill landed after the run had stopped, not mid-run"
        assert fsck_clean(run)
        seen |= set(git(run, "rev-list", "--all").split())
        mains.append(git(run, "rev-parse", "main").strip())
        assert charged(run) <= DEMO_BUDGET
    finished = subprocess.run([sys.executable, "-m", "gitswarm", "demo", "--run", str(run)],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert re.search(r"^resuming run \S+: \d+ of 60 episodes spent \(\d+ in all, at most \d+\)(, \d+ left unfinished "
                     r"by a crash or kill and run again where their problem is open)?; \d+ workers$", finished.stdout,
                     re.MULTILINE), finished.stdout[:2000]
    assert f"Read a solution: gitswarm show {run} PROBLEM" in finished.stdout
    assert seen <= set(git(run, "rev-list", "--all").split())  # nothing committed was lost
    for old in mains:  # main only moved forward
        git(run, "merge-base", "--is-ancestor", old, "main")
    ops = Counter(op for op in git(run, "log", "--all", "--format=%(trailers:key=Gitswarm-Op,valueonly)").split()
                  if not op.startswith("merge-"))
    assert ops and set(ops.values()) == {1}
    assert charged(run) <= DEMO_BUDGET and fsck_clean(run)
    assert git(run, "branch", "--list", "swarm/*").strip() == ""
    for problem in ("demo-odd-sum", "demo-divisors-36", "demo-hexagon-angles", "demo-reverse-words"):
        assert "candidate:" in git(run, "show", f"main:problems/{problem}/SOLUTION.md")
