"""The scripted model's `persist` mode, which the paper-scale benchmark (scripts/bench_scale.py)
runs on: where nothing settles and nothing is advised, the plain model abstains and the run
ends by the no-progress rule long before its budget; the persisting one attempts again, as a
real model on an open problem does, and the run spends its whole budget."""

from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path

import anyio
import pytest

from gitswarm.core.stops import StopReason
from gitswarm.demo.brain import respond
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.kernel import RunResult
from gitswarm.engine.run import solve
from gitswarm.fakeserver import serve
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set

BUDGET = 24


@pytest.fixture
def problem_set(tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    folder.mkdir()
    for k in range(2):
        (folder / f"p{k}.md").write_text(f"---\nid: p{k}\ntitle: Problem {k}\nkind: answer\nanswer: '{2 * k}'\n---\n"
                                         f"What is {k} + {k}? Give the number.\n")
    return folder


async def run(problem_set: Path, run_dir: Path, persist: bool) -> RunResult:
    problems = load_set(problem_set)
    async with serve(partial(respond, persist=persist)) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k", reply_timeout_s=5)
        model = LiteLLMModel(config)
        cfg = SolveConfig.for_set(problems, run_dir, model=config.model, workers=4, budget=BUDGET,
                                  settle_nominations=10**6)
        with anyio.fail_after(120):
            return await solve(cfg, problems, model, model, None)


def test_a_persisting_model_spends_the_budget_where_a_waiting_one_stops(problem_set: Path, tmp_path: Path):
    waiting = anyio.run(run, problem_set, tmp_path / "waiting", False)
    assert waiting.reason.reason == StopReason.NO_PROGRESS and waiting.charged < BUDGET
    persisting = anyio.run(run, problem_set, tmp_path / "persisting", True)
    assert persisting.reason.reason == StopReason.BUDGET and persisting.charged == BUDGET
    assert attempts(tmp_path / "persisting") > attempts(tmp_path / "waiting")


def attempts(run_dir: Path) -> int:
    """The attempts on main, every problem's."""
    listed = subprocess.run(["git", "-C", str(run_dir), "ls-tree", "-r", "--name-only", "main"],
                            capture_output=True, text=True, check=True).stdout.split()
    return sum("/attempts/" in path for path in listed)
