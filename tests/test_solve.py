"""The swarm end to end: the real engine, the real litellm path, the fake server on 127.0.0.1
playing the scripted model, real git repositories."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import anyio
import pytest
from conftest import fsck_clean, git
from demo_run import run_set

from gitswarm.core.stops import Stop, StopReason
from gitswarm.fakeserver import FaultPlan
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def run_swarm(problem_dir: Path, run: Path, faults: FaultPlan | None = None, **options):
    return await run_set(problem_dir, run, faults, **options)


def ops_in_history(run: Path) -> Counter:
    text = git(run, "log", "--all", "--format=%(trailers:key=Gitswarm-Op,valueonly)")
    return Counter(op for op in text.split() if not op.startswith("merge-"))


@pytest.mark.anyio
async def test_demo_set_is_solved_end_to_end(tmp_path: Path):
    run = tmp_path / "run"
    result, _ = await run_swarm(resolve_set("demo"), run, workers=4, budget=60)
    assert result.reason.reason is StopReason.SETTLED and result.reason.detail == "every problem is settled"
    assert set(result.selected) == {p.id for p in load_set(resolve_set("demo")).problems}
    assert all(s is not None and s.verified for s in result.selected.values())
    for problem, selected in result.selected.items():
        solution = git(run, "show", f"main:problems/{problem}/SOLUTION.md")
        assert f"candidate: {selected.candidate}" in solution
    # Every contribution arrived by a merge (how many branches each took in depends on timing:
    # one compose of several branches is test_memory's).
    assert git(run, "log", "main", "--merges", "--format=%P").splitlines()
    notes = git(run, "notes", "--ref=transcripts", "list").splitlines()
    assert len(notes) >= result.charged - 1
    assert set(ops_in_history(run).values()) == {1}
    assert result.charged <= 60 and fsck_clean(run)
    cited = git(run, "log", "main", "--format=%(trailers:key=Gitswarm-Informed-By,valueonly)")
    assert len([line for line in cited.splitlines() if line.strip()]) >= 4  # work built on work


@pytest.mark.anyio
async def test_budget_is_never_exceeded_and_abstaining_is_free(tmp_path: Path, problem_dir: Path):
    result, _ = await run_swarm(problem_dir, tmp_path / "run", workers=3, budget=5)
    assert result.charged == 5 and result.reason == Stop(StopReason.BUDGET, "budget of 5 episodes spent")
    again, _ = await run_swarm(problem_dir, tmp_path / "run", workers=3, budget=5)
    assert again.charged == 5 and again.episodes == result.episodes  # resume: nothing re-spent


@pytest.mark.anyio
async def test_token_cap_stops_cleanly(tmp_path: Path, problem_dir: Path):
    result, _ = await run_swarm(problem_dir, tmp_path / "run", workers=2, verify=0, budget=50, max_total_tokens=20_000)
    assert result.reason == Stop(StopReason.TOKEN_CAP, "token cap of 20000 reached")
    assert result.charged < 50
    assert fsck_clean(tmp_path / "run")


@pytest.mark.e2e  # every fault kind over the demo stays in the default run: test_chaos.py
@pytest.mark.anyio
async def test_provider_faults_are_retried_or_end_episodes_cleanly(tmp_path: Path):
    faults = FaultPlan(rate=0.2, seed=7, kinds=("rate_limit", "server_error", "reset",
                                                "malformed_args", "timeout", "empty"),
                       retry_after_s=0)
    result, server = await run_swarm(resolve_set("demo"), tmp_path / "run", faults, workers=4,
                                     budget=60, no_progress=12)
    # Faults may end some episodes (an abstention, a failed call), so the budget may run out first;
    # failed episodes count toward the no-progress rule, which this test is not about.
    assert result.reason.reason in (StopReason.SETTLED, StopReason.BUDGET), result.reason
    assert set(ops_in_history(tmp_path / "run").values()) == {1}
    injected = server.injected
    assert injected["malformed_args"] and injected["rate_limit"]
    assert fsck_clean(tmp_path / "run")


def test_no_model_prints_guidance(tmp_path: Path):
    from typer.testing import CliRunner

    from gitswarm.cli.main import app

    env = {k: None for k in os.environ if k.endswith(("_API_KEY", "_API_BASE")) or k == "GITSWARM_MODEL"}
    done = CliRunner().invoke(app, ["solve", "demo", "--run", str(tmp_path / "r")], env=env)
    assert done.exit_code == 2
    assert "No model is configured" in done.stderr and "gitswarm demo" in done.stderr
    done = CliRunner().invoke(app, ["solve", "demo", "--model", "openai/gpt-4o", "--run", str(tmp_path / "r")],
                              env=env)
    assert done.exit_code == 2 and "OPENAI_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "r").exists()


@pytest.mark.anyio
async def test_status_and_log_read_a_finished_run(tmp_path: Path):
    from typer.testing import CliRunner

    from gitswarm.cli.main import app

    run = tmp_path / "run"
    result, _ = await run_swarm(resolve_set("demo"), run, workers=2, verify=0, budget=40)
    shown = CliRunner().invoke(app, ["status", str(run), "--json"])
    assert shown.exit_code == 0, shown.output
    status = json.loads(shown.output)
    assert status["totals"]["charged"] == result.charged
    # status reads running totals; they must equal the sums over every episode record
    records = [json.loads(git(run, "show", f"refs/gitswarm/ledger:{path}"))
               for path in git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/ledger").split()
               if path.startswith("episodes/")]
    assert status["totals"]["tokens"] == sum(r["tokens_in"] + r["tokens_out"] for r in records) == result.tokens
    assert status["totals"]["episodes"] == sum(r["episode"] != "merger" for r in records)
    assert status["totals"]["charged"] == sum(r["status"] in ("contribute", "nominate") for r in records)
    for part in ("tokens_in", "tokens_out", "cache_read", "cache_write", "reasoning", "calls", "failed_calls"):
        assert status["totals"][part] == sum(r.get(part, 0) for r in records), part
    assert status["totals"]["calls"] > 0
    assert {p["id"]: p["state"] for p in status["problems"]} == dict.fromkeys(result.selected, "selected")
    for row in status["problems"]:
        assert row["selected"] == result.selected[row["id"]].path
        votes = git(run, "ls-tree", "--name-only", f"main:problems/{row['id']}/nominations/")
        assert row["nominations"] == votes.count("\n")
    table = CliRunner().invoke(app, ["status", str(run)]).output
    assert "cost unknown" in table and "demo-odd-sum" in table
    assert f"{status['totals']['calls']:,} calls, 0 failed" in table and "cache read 0" in table
    log = CliRunner().invoke(app, ["log", str(run), "--problem", "demo-odd-sum", "--kind", "attempt"]).output
    assert "attempt(demo-odd-sum)" in log and "built on:" in log
    graded = await anyio.to_thread.run_sync(  # the command runs its own event loop
        lambda: CliRunner().invoke(app, ["grade", str(run), "--problem", "demo-divisors-36"]))
    assert graded.exit_code == 0, graded.output
    rows = json.loads(CliRunner().invoke(app, ["status", str(run), "--json"]).output)["problems"]
    assert {r["id"]: r["grade"] for r in rows}["demo-divisors-36"] == "1/1"


@pytest.mark.anyio
async def test_stale_ref_locks_of_a_killed_process_are_cleared_and_a_busy_run_refused(
        tmp_path: Path, problem_dir: Path):
    from gitswarm.engine.runlock import RunBusy, run_lock

    run = tmp_path / "run"
    await run_swarm(problem_dir, run, workers=2, verify=0, budget=2)
    (run / "refs" / "heads" / "main.lock").write_text("left by a kill -9")
    (run / "refs" / "heads" / "swarm").mkdir(exist_ok=True)
    (run / "refs" / "heads" / "swarm" / "e00099.lock").write_text("")
    again, _ = await run_swarm(problem_dir, run, workers=2, verify=0, budget=4)
    assert again.charged == 4 and not list(run.glob("refs/**/*.lock"))
    with run_lock(run), pytest.raises(RunBusy, match="another gitswarm"):
        await run_swarm(problem_dir, run, workers=2, verify=0, budget=6)


@pytest.mark.anyio
async def test_a_provider_that_always_fails_stops_the_run(tmp_path: Path, problem_dir: Path):
    faults = FaultPlan(rate=1.0, kinds=("server_error",))
    result, server = await run_swarm(problem_dir, tmp_path / "run", faults, workers=2, verify=0, budget=10)
    assert result.reason.reason is StopReason.PROVIDER_FAILING and result.charged == 0
    assert "episodes in a row failed because the model provider did not answer" in result.reason.detail
    assert "the last error: model call failed (server)" in result.reason.detail
    assert result.episodes <= 2 + 2  # the third failure stops it; one more may be in flight
    assert len(server.requests) == result.episodes * 5  # each episode's call tried 1 + 4 times
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory

    totals = Ledger.summary(Memory(tmp_path / "run"))  # failed attempts are calls, and counted
    assert totals.calls == totals.failed_calls == len(server.requests)

