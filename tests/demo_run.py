"""A demo run made once per test session by the real engine in-process (the scripted brain
behind the real fake server), shared by the dashboard and report tests."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gitswarm.demo.brain import respond
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FaultPlan, serve
from gitswarm.models import LiteLLMModel, ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set


async def run_set(problem_dir: Path, run: Path, faults: FaultPlan | None = None, listeners=None,
                  control=None, **options):
    """`problem_dir` solved into `run` by the scripted model; returns (RunResult, the fake server)."""
    problem_set = load_set(problem_dir)
    async with serve(respond, faults) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=5, backoff_base_s=0.01, backoff_cap_s=0.05)
        model = LiteLLMModel(config)
        cfg = SolveConfig.for_set(problem_set, run, model=config.model, **options)
        with anyio.fail_after(120):
            return await solve(cfg, problem_set, model, model, listeners, control), server


async def run_demo(run: Path, faults: FaultPlan | None = None, listeners=None, control=None, **options):
    """The demo set solved into `run`; returns the engine's RunResult."""
    result, _ = await run_set(resolve_set("demo"), run, faults, listeners, control, **options)
    return result


def demo_run(factory: pytest.TempPathFactory) -> Path:
    """The session's finished demo run (made on first use, then reused by every module)."""
    run = factory.getbasetemp() / "demo-run"
    if not (run / "gitswarm-events.jsonl").exists() or b"run_stopped" not in (
            run / "gitswarm-events.jsonl").read_bytes():
        anyio.run(lambda: run_demo(run, workers=4, budget=60))
    return run
