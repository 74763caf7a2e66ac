"""A run bounded in wall time, fit for batch schedulers: at `--time-limit` and on SIGTERM the
episodes in flight get the stop grace, then are cut short, even inside a long sandboxed
program; each cut episode is recorded `stopped` (uncharged) with its transcript, and
`log --episode` says how it ended. A model that asks for a 60-second program on every call
stands in for a slow episode; the fake provider on 127.0.0.1, the real engine and CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.from_thread
import pytest
from typer.testing import CliRunner

from gitswarm.cli.common import Exit
from gitswarm.cli.main import app
from gitswarm.cli.running import run_swarm
from gitswarm.cli.solve import _config
from gitswarm.engine.ledger import Ledger
from gitswarm.fakeserver import FakeReply, FakeServer, serve
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.sandbox import containment

pytestmark = pytest.mark.skipif(containment().backend is None, reason="no sandbox backend: run_python cannot run")
SLOW = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n"
"""A program that outlasts every bound of the test but its own 30 s wall limit."""


def slow_program(request: dict) -> FakeReply:
    return FakeReply(tool_calls=[{"name": "run_python", "arguments": {"code": SLOW}}])


def records(run: Path) -> list:
    return list(Ledger.load(Memory(run)).episodes.values())


def test_the_time_limit_cuts_the_episodes_in_flight_after_the_grace(problem_dir: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    problem_set = load_set(problem_dir)
    run = tmp_path / "run"
    cfg = _config(problem_set, "openai/gitswarm-fake", run, workers=2, verify=0, api_key="k", budget=4,
                  time_limit_s=1.0)
    cfg = cfg.model_copy(update={"stop_grace_s": 1.0})
    began = time.monotonic()
    assert run_swarm(cfg, problem_set, as_json=False, responder=slow_program) == Exit.OK
    took = time.monotonic() - began
    assert took < 25, f"the run took {took:.1f} s: the programs in flight held it past the grace"
    shown = capsys.readouterr().out
    assert "time limit of 1 s reached: the 2 episode(s) in flight have 1 s to finish, then are cut short" in shown
    assert "cut short 1 s after the time limit" in shown
    cut = records(run)
    assert len(cut) == 2 and {r.status for r in cut} == {"stopped"}
    assert all(r.note.startswith("cut short 1 s after the time limit after 1 model calls") for r in cut), cut
    assert all(r.calls == 1 and r.tokens_in > 0 and r.transcript for r in cut)  # spending and transcript kept
    assert Ledger.load(Memory(run)).charged == 0  # a cut episode is not charged
    log = CliRunner().invoke(app, ["log", str(run), "--episode", cut[0].episode])
    assert log.exit_code == 0, log.output
    assert "stopped" in log.output and "cut short 1 s after the time limit" in log.output
    assert "--- transcript" in log.output and "run_python" in log.output


@pytest.fixture
def provider() -> Iterator[FakeServer]:
    """The fake provider, answering with the slow program, on a loop of its own."""
    with anyio.from_thread.start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(serve(slow_program)) as server:
        yield server


def test_sigterm_stops_the_run_within_its_grace_and_keeps_what_ran(provider: FakeServer, problem_dir: Path,
                                                                   tmp_path: Path) -> None:
    """What `timeout`, Slurm and Kubernetes do: SIGTERM, then SIGKILL after their own grace.
    The run ends within the stop grace (2 s here, 20 by default), exits as a user's stop does,
    and the next run resumes."""
    run, config = tmp_path / "run", tmp_path / "gitswarm.toml"
    config.write_text("[solve]\nstop_grace_s = 2\n")
    argv = [sys.executable, "-m", "gitswarm", "solve", str(problem_dir), "--run", str(run), "--workers", "1",
            "--budget", "2", "--verify", "0", "--model", "openai/gitswarm-fake", "--api-base", provider.url,
            "--no-tui", "--json"]
    env = {**os.environ, "OPENAI_API_KEY": "not-secret", "GITSWARM_CONFIG": str(config)}
    solve = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in solve.stdout:  # the first tool call: the slow program is running
            if json.loads(line)["kind"] == "tool":
                break
        time.sleep(0.5)
        sent = time.monotonic()
        solve.send_signal(signal.SIGTERM)
        out, err = solve.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        solve.kill()
    assert solve.returncode == Exit.INTERRUPTED, err
    assert took < 15, f"SIGTERM took {took:.1f} s to stop the run (grace 2 s)"
    assert "SIGTERM" in err
    kinds = [json.loads(line)["kind"] for line in out.splitlines()]
    assert "winding_down" in kinds and "episodes_cut" in kinds and kinds[-1] == "run_stopped"
    [cut] = records(run)
    assert cut.status == "stopped" and cut.note.startswith("cut short 2 s after SIGTERM"), cut
    assert cut.transcript and "run_python" in (Memory(run).book_text(cut.transcript) or "")
