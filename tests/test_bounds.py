"""Every run is bounded by what the user set, and says why it stopped: the episode cap and
the no-progress rule through the real CLI (a subprocess) against the fake server started
here, with models that never make progress."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from gitswarm.core.stops import StopReason
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.setaside import Streaks
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory.repo import Memory

PROBLEMS = {"sum", "odd", "rev"}  # conftest.write_set


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def abstainer(request: dict) -> FakeReply:
    """A model that abstains at once, every episode."""
    return FakeReply(tool_calls=[_call("abstain", reason="I would rather not")])


def refused(request: dict) -> FakeReply:
    """A model whose every tool call is refused: it writes outside its folder or calls a tool
    that does not exist, then abstains once it has read the refusal."""
    messages = request.get("messages", [])
    if any(m["role"] == "tool" for m in messages):
        return FakeReply(tool_calls=[_call("abstain", reason="my tool calls keep failing")])
    if sum(len(m.get("content") or "") for m in messages) % 2:
        return FakeReply(tool_calls=[_call("write_file", path="../../outside.md", content="x")])
    return FakeReply(tool_calls=[_call("launch_rockets", target="moon")])


PROVIDERS = [("openai", "openai/gitswarm-fake"), ("anthropic", "anthropic/claude-sonnet-4-5")]
"""The fake providers the bounds are proved through: each with the provider's own rules."""


async def solve_cli(problem_dir: Path, run: Path, responder, *flags: str, provider=PROVIDERS[0]):
    """`gitswarm solve` in a subprocess against a fake server; (process, events, worker requests).
    These runs test bounds, not verification: `--verify 0`, so one or two workers may run them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSWARM_", "ANTHROPIC_", "OPENAI_"))}
    env |= {"HOME": str(run.parent)}
    personality, model = provider
    async with serve(responder, personality=personality) as server:
        args = [sys.executable, "-m", "gitswarm", "solve", str(problem_dir), "--run", str(run),
                "--model", model, "--api-base", server.url, "--no-tui", "--json", "--verify", "0", *flags]
        with anyio.fail_after(120):
            done = await anyio.run_process(args, check=False, env=env, cwd=run.parent)
        workers = [r for r in server.requests if r.get("tools")]
    events = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    return done, events, workers


def stopped(events: list[dict]) -> dict:
    return next(e["data"] for e in events if e["kind"] == "run_stopped")


def worker_calls(run: Path) -> int:
    return sum(r.calls for key, r in Ledger.load(Memory(run)).episodes.items() if key != "merger")


@pytest.mark.e2e  # the CLI in a subprocess; bounds and exit codes in-process: test_stops.py, test_failures.py
@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS, ids=[p for p, _ in PROVIDERS])
async def test_a_model_that_always_abstains_stops_at_the_episode_cap(tmp_path: Path, problem_dir: Path, provider):
    run = tmp_path / "run"
    began = time.monotonic()
    done, events, requests = await solve_cli(problem_dir, run, abstainer, "--budget", "2", "--workers", "2",
                                             "--no-progress", "10", provider=provider)
    assert time.monotonic() - began < 90
    assert done.returncode == 0, done.stderr.decode()
    end = stopped(events)
    assert end["reason"] == StopReason.EPISODE_CAP == "episode_cap"
    assert end["detail"].startswith("episode cap of 6 reached")  # the default: three times the budget
    assert (end["episodes"], end["charged"]) == (6, 0)
    totals = Ledger.summary(Memory(run))
    assert totals.episodes == 6 and totals.calls == len(requests) == 6
    again, events, requests = await solve_cli(problem_dir, run, abstainer, "--budget", "2", "--no-progress", "10",
                                              provider=provider)
    assert again.returncode == 0 and stopped(events)["reason"] == "episode_cap"
    assert not requests and Ledger.summary(Memory(run)).episodes == 6  # resume keeps counting


@pytest.mark.e2e  # the CLI in a subprocess; bounds and exit codes in-process: test_stops.py, test_failures.py
@pytest.mark.anyio
async def test_refused_tool_calls_set_every_problem_aside(tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    done, events, requests = await solve_cli(problem_dir, run, refused, "--no-progress", "2", "--workers", "1")
    assert done.returncode == 1, done.stderr.decode()
    end = stopped(events)
    assert end["reason"] == StopReason.NO_PROGRESS
    for problem in PROBLEMS:
        assert f"{problem}: 2 abstained" in end["detail"]
    assert "my tool calls keep failing" in end["detail"]
    message = done.stderr.decode().strip().splitlines()[-1]
    assert message.startswith("gitswarm: the run stopped: no progress") and all(p in message for p in PROBLEMS)
    assert {e["data"]["problem"] for e in events if e["kind"] == "set_aside"} == PROBLEMS
    shown = await anyio.run_process([sys.executable, "-m", "gitswarm", "status", str(run), "--json"], check=True)
    assert {p["id"]: p["state"] for p in json.loads(shown.stdout)["problems"]} == dict.fromkeys(PROBLEMS, "set aside")
    assert end["episodes"] == 6 and end["charged"] == 0
    assert worker_calls(run) == len(requests) == 12  # a refused call, then the abstention
    tools = [m for r in requests for m in r["messages"] if m["role"] == "tool"]
    assert tools and all(m["content"].startswith("error:") for m in tools)

    # Resumed, the problems are still set aside: no episode starts, the same verdict.
    again, events, requests = await solve_cli(problem_dir, run, refused, "--no-progress", "2", "--workers", "1")
    assert again.returncode == 1 and not requests
    assert stopped(events)["reason"] == "no_progress"
    assert set(next(e["data"] for e in events if e["kind"] == "run_started")["set_aside"]) == PROBLEMS
    # A larger N gives each problem one more chance.
    again, events, requests = await solve_cli(problem_dir, run, refused, "--no-progress", "3", "--workers", "1")
    assert again.returncode == 1 and stopped(events)["episodes"] == 9
    assert worker_calls(run) == 18 and len(requests) == 6


def test_streaks_follow_the_order_episodes_ended_in():
    from gitswarm.domain.episode import EpisodeRecord

    def record(n: int, problem: str, status: str, ended: float) -> EpisodeRecord:
        return EpisodeRecord(f"e{n:05d}", "w01", problem, status, started=0.0, ended=ended, note=f"n{n}")

    records = [record(1, "a", "abstain", 1), record(2, "a", "failed", 2), record(3, "b", "abstain", 3),
               record(5, "a", "abstain", 4), record(4, "b", "contribute", 5),  # ended after e00005
               record(6, "b", "stopped", 6), record(7, "b", "abstain", 7)]
    streaks = Streaks.from_records(3, records)
    assert streaks.set_aside == {"a"}  # b's contribution ended its streak; a stopped episode says nothing
    assert streaks.describe("a") == "2 abstained, 1 failed (last: 'n5')"
    assert Streaks.from_records(4, records).set_aside == set()
    assert not streaks.add(record(8, "a", "abstain", 8))  # already aside: not set aside again
    assert streaks.add(record(9, "a", "nominate", 9)) is False and streaks.set_aside == set()


@pytest.mark.e2e  # the CLI in a subprocess; bounds and exit codes in-process: test_stops.py, test_failures.py
@pytest.mark.anyio
async def test_refused_tool_calls_stop_by_the_no_progress_rule_over_anthropic(tmp_path: Path, problem_dir: Path):
    """The same model over Anthropic's rules: each refused call answered as a tool_result the
    provider accepts, the run bounded by the no-progress rule, every call in the ledger."""
    run = tmp_path / "run"
    began = time.monotonic()
    done, events, requests = await solve_cli(problem_dir, run, refused, "--no-progress", "2", "--workers", "1",
                                             provider=PROVIDERS[1])
    assert time.monotonic() - began < 90
    assert done.returncode == 1, done.stderr.decode()
    end = stopped(events)
    assert end["reason"] == StopReason.NO_PROGRESS and end["episodes"] == 6 and end["charged"] == 0
    assert worker_calls(run) == len(requests) == 12
