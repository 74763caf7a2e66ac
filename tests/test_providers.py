"""The whole swarm over each provider personality of the fake server: the real engine, real
litellm, the scripted model behind a server that enforces the provider's documented rules.
Each run must finish with no request refused (but the refusals that teach the client what
the model takes), bill what the provider bills, and, where prompts are cached, read most of
its input from the cache.

The default run keeps one provider end to end (Anthropic with thinking: tool turns, cache,
bill, transcripts); the rest are `e2e`, for CI. Each provider's rules are pinned at the
client level (test_fakeserver_personalities.py, test_model_rules.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gitswarm.core.stops import StopReason
from gitswarm.demo.brain import respond
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.run import solve
from gitswarm.fakeserver import serve
from gitswarm.memory.repo import Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def demo_over(personality: str, model: str, run: Path, **options):
    """The demo set over `personality`; returns (result, ledger totals, server, model client)."""
    problems = resolve_set("demo")
    async with serve(respond, personality=personality) as server:
        config = ModelConfig(model=model, api_base=server.url, api_key="k", reply_timeout_s=20,
                             backoff_base_s=0.01, **options)
        client = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=run, model=model, workers=4, budget=60)
        with anyio.fail_after(120):
            result = await solve(cfg, load_set(problems), client, client)
    return result, Ledger.load(Memory(run)).totals, server, client


def finished(result) -> bool:
    """The run ended as a demo run normally does (settled, or its budget spent when timing
    spread the votes) with a solution for every problem."""
    return (result.reason.reason in (StopReason.SETTLED, StopReason.BUDGET)
            and all(sel is not None for sel in result.selected.values()))


@pytest.mark.anyio
@pytest.mark.parametrize("effort", [pytest.param(None, marks=pytest.mark.e2e), "high"])
async def test_anthropic_thinking_tool_turns_are_never_refused_and_mostly_cached(tmp_path: Path, effort):
    result, totals, server, _ = await demo_over("anthropic", "anthropic/claude-sonnet-4-5", tmp_path / "run",
                                                reasoning_effort=effort)
    assert finished(result), result.reason
    assert server.rejections == []
    assert totals.cache_read / totals.tokens_in >= 0.6
    assert totals.cost_usd == pytest.approx(server.bill_usd(), rel=0.01)
    if effort:
        assert totals.reasoning > 0
        assert all(r.get("thinking") for r in server.requests if r.get("tools"))
        import subprocess

        notes = subprocess.run(["git", "-C", str(tmp_path / "run"), "log", "--notes=transcripts", "--format=%N",
                                "--all"], capture_output=True, text=True, check=True).stdout
        assert "<thinking>" in notes  # the model's thinking is in the readable history


@pytest.mark.e2e
@pytest.mark.anyio
async def test_an_anthropic_model_litellm_does_not_know_adopts_the_stated_limit(tmp_path: Path):
    result, totals, server, client = await demo_over("anthropic", "anthropic/claude-fake-9", tmp_path / "run")
    assert finished(result), result.reason
    assert client.output_limit == 8192  # the fake's limit for a model it does not know
    assert {r.status for r in server.rejections} == {400}
    assert all("maximum allowed number of output tokens" in r.message for r in server.rejections)
    assert len(server.rejections) <= 4  # at most the episodes that started before the first refusal
    assert totals.failed_calls == len(server.rejections)


@pytest.mark.e2e
@pytest.mark.anyio
async def test_an_openai_reasoning_model_runs_and_bills_reasoning(tmp_path: Path):
    result, totals, server, _ = await demo_over("openai-reasoning", "openai/o4-mini", tmp_path / "run",
                                                reasoning_effort="medium", temperature=0.2)
    assert finished(result), result.reason
    assert server.rejections == []
    assert totals.reasoning > 0 and totals.cache_read > 0
    assert totals.cost_usd == pytest.approx(server.bill_usd(), rel=0.01)


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_local_server_without_tools_completes_through_the_text_protocol(tmp_path: Path):
    result, totals, server, client = await demo_over("local-no-tools", "openai/llama-local", tmp_path / "run")
    assert finished(result), result.reason
    assert client.protocol == "text"
    assert sum("tools" not in r for r in server.requests) > 0.9 * len(server.requests)
    assert all(r.status == 400 for r in server.rejections) and totals.failed_calls == len(server.rejections)



@pytest.mark.e2e
@pytest.mark.parametrize("provider", ["anthropic", "openai-reasoning", "local-no-tools"])
def test_gitswarm_demo_runs_over_each_provider(tmp_path: Path, provider: str):
    """The real command: `gitswarm demo --provider P` ends with a solution per problem, and
    status reads the parts of usage the provider reported."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSWARM_", "OPENAI_", "ANTHROPIC_"))}
    done = subprocess.run([sys.executable, "-m", "gitswarm", "demo", "--no-tui", "--provider", provider,
                           "--run", str(tmp_path / "run")], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no candidate" not in done.stdout and "Traceback" not in done.stderr
    # It ends by grading: answers and programs for real, the proof by the scripted judge, said so.
    assert "scripted judge (openai/gitswarm-scripted-judge)" in done.stdout
    for line in ("demo-divisors-36     answer   ", "demo-odd-sum         proof    ",
                 "proof-judge (openai/gitswarm-scripted-judge)  7/7", "1.00 (10/10 tests)",
                 "reproduce: mean score 1.000 over 1 problem(s)"):
        assert line in done.stdout, line
    graded = subprocess.run(["git", "-C", str(tmp_path / "run"), "ls-tree", "-r", "--name-only",
                             "refs/gitswarm/grades"], capture_output=True, text=True, check=True).stdout
    assert {path.split("/")[1] for path in graded.split()} >= {"demo-divisors-36", "demo-hexagon-angles",
                                                               "demo-odd-sum", "demo-reverse-words", "demo-shout"}
    if provider != "local-no-tools":
        assert "USD " in done.stdout  # a priced model: what the provider would bill
    status = subprocess.run([sys.executable, "-m", "gitswarm", "status", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    if provider == "anthropic":
        assert "cache read" in status.stdout


@pytest.mark.e2e
def test_a_demo_with_another_provider_runs_in_its_own_folder(tmp_path: Path):
    """The quick start's next step: `gitswarm demo --provider P` after `gitswarm demo` starts a run of
    its own (runs/demo-P) under P's model, leaving runs/demo as it was, rather than resuming it."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSWARM_", "OPENAI_", "ANTHROPIC_"))}

    def demo(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gitswarm", "demo", "--no-tui", *args], capture_output=True,
                              text=True, timeout=300, env=env, cwd=tmp_path)

    assert demo().returncode == 0
    before = subprocess.run(["git", "-C", str(tmp_path / "runs" / "demo"), "rev-parse", "refs/gitswarm/ledger"],
                            capture_output=True, text=True, check=True).stdout
    other = demo("--provider", "local-no-tools")
    assert other.returncode == 0, other.stderr
    assert "resuming" not in other.stdout + other.stderr
    assert (tmp_path / "runs" / "demo-local-no-tools" / "gitswarm-events.jsonl").exists()
    assert subprocess.run(["git", "-C", str(tmp_path / "runs" / "demo"), "rev-parse", "refs/gitswarm/ledger"],
                          capture_output=True, text=True, check=True).stdout == before
