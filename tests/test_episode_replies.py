"""Replies real models give that a scripted model never does, through the real engine, litellm
and the fake server: a reply cut off mid tool call, text without a tool call, TeX that JSON
ate, broken JSON, and episodes that hit the step limit or the wall clock."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from conftest import git

from gitswarm.engine.config import SolveConfig
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, ScriptedResponder, serve
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

PROBLEM = "demo-odd-sum"
NOTE = "# Odd sums\n\nThe sum of the first $n$ odd numbers is $n^2$: $\\sum_{k=1}^n (2k-1) = n^2$.\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def call(name: str, arguments: dict | str) -> dict:
    return {"name": name, "arguments": arguments}


WRITE = call("write_file", {"path": "notes/odd.md", "content": NOTE})
CONTRIBUTE = call("contribute", {"kind": "note", "title": "odd sums are squares", "summary": "By induction."})


async def one_episode(tmp_path: Path, replies: list, *, personality: str = "openai",
                      model_name: str = "openai/gitswarm-scripted", **options):
    """One episode on one demo problem, scripted reply by reply; returns (record, server, run)."""
    problems = resolve_set("demo")
    script = ScriptedResponder(replies)
    async with serve(script, personality=personality) as server:
        config = ModelConfig(model=model_name, api_base=server.url, api_key="k",
                             max_output_tokens=4096, reply_timeout_s=5, backoff_base_s=0.01)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=tmp_path / "run", model=config.model, workers=1, verify=0, budget=1,
                          max_episodes=1, problem_ids=(PROBLEM,), **options)
        with anyio.fail_after(60):
            await solve(cfg, load_set(problems), model, model)
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory

    ledger = Ledger.load(Memory(tmp_path / "run"))
    return ledger.episodes["e00001"], server, tmp_path / "run"


def said(server, index: int) -> str:
    """Everything the engine sent in request `index` after the first two messages."""
    return json.dumps(server.requests[index]["messages"][2:])


@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "model_name"), [("openai", "openai/gitswarm-scripted"),
                                                        ("anthropic", "anthropic/claude-sonnet-4-5")])
async def test_a_reply_cut_off_mid_call_runs_nothing_and_the_next_step_recovers(tmp_path: Path, personality,
                                                                                 model_name):
    cut = FakeReply(tool_calls=[call("write_file", '{"path": "attempts/a.md", "content": "half a pro')],
                    finish_reason="length")
    record, server, run = await one_episode(tmp_path, [cut, FakeReply(tool_calls=[WRITE]),
                                                       FakeReply(tool_calls=[CONTRIBUTE])],
                                            personality=personality, model_name=model_name)
    assert record.status == "contribute" and record.calls == 3
    assert "cut off at the output limit of 4096 tokens" in said(server, 1)
    assert "append" in said(server, 1)
    assert server.rejections == []
    files = git(run, "ls-tree", "-r", "--name-only", record.commit).split()
    assert f"problems/{PROBLEM}/notes/odd.md" in files
    assert not any("attempts/a.md" in f for f in files)  # the half call was never run


@pytest.mark.anyio
async def test_text_only_replies_are_nudged_with_a_forced_tool_call_then_fail(tmp_path: Path):
    thinking = FakeReply(content="Let me think about the parity of the sum first.")
    record, server, _ = await one_episode(tmp_path, [thinking] * 4)
    assert record.status == "failed" and "4 replies without a tool call" in record.note
    assert "called no tool" in said(server, 1)
    assert server.requests[0]["tool_choice"] == "auto"  # a self-hosted server is told: not every one defaults so
    assert server.requests[1]["tool_choice"] == "required"
    # Two replies in prose although tools were offered: a model litellm does not know is then
    # spoken to through the text protocol, which forces nothing.
    assert all("tools" not in r and "<call name=" in r["messages"][0]["content"] for r in server.requests[2:])


@pytest.mark.anyio
async def test_one_nudge_and_the_episode_goes_on(tmp_path: Path):
    thinking = FakeReply(content="First a plan.")
    record, _, _ = await one_episode(tmp_path, [thinking, FakeReply(tool_calls=[WRITE]),
                                                FakeReply(tool_calls=[CONTRIBUTE])])
    assert record.status == "contribute"


@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "model_name"), [("openai", "openai/gitswarm-scripted"),
                                                        ("anthropic", "anthropic/claude-sonnet-4-5")])
async def test_tex_eaten_by_json_is_sent_back_and_lenient_json_is_accepted(tmp_path: Path, personality, model_name):
    eaten = '{"path": "notes/odd.md", "content": "$\\frac{1}{2}$ and $\\theta$"}'  # \f and \t escapes
    raw_newline = '{"path": "notes/odd.md", "content": "line one\nline two \\\\frac{1}{2}"}'
    broken = '{"path": "notes/odd.md", "content": [1, 2'
    record, server, run = await one_episode(tmp_path, [
        FakeReply(tool_calls=[call("write_file", eaten)]),
        FakeReply(tool_calls=[call("write_file", broken)]),
        FakeReply(tool_calls=[call("write_file", raw_newline)]),
        FakeReply(tool_calls=[CONTRIBUTE])], personality=personality, model_name=model_name)
    assert server.rejections == []  # the broken turns went back in a form the provider takes
    assert record.status == "contribute"
    assert "form feed where the TeX command `\\\\frac` was probably meant" in said(server, 1)
    stored = git(run, "show", f"{record.commit}:problems/{PROBLEM}/notes/odd.md")
    assert stored == "line one\nline two \\frac{1}{2}"


@pytest.mark.anyio
async def test_the_step_limit_fails_the_episode_and_keeps_its_staged_work(tmp_path: Path):
    replies = [FakeReply(tool_calls=[WRITE])] + [FakeReply(tool_calls=[call("list_items", {})])] * 2
    record, _, run = await one_episode(tmp_path, replies, max_steps=3)
    assert record.status == "failed" and "step limit (3)" in record.note
    assert f"notes/incomplete-{record.episode}.md" in record.note
    kept = git(run, "show", f"{record.commit}:problems/{PROBLEM}/notes/incomplete-{record.episode}.md")
    assert "Staged as `notes/odd.md`" in kept and "$n^2$" in kept
    assert "Gitswarm-Kind: note" in git(run, "log", "-1", "--format=%B", record.commit)


@pytest.mark.anyio
async def test_the_wall_clock_fails_the_episode_and_keeps_its_staged_work(tmp_path: Path):
    async def slow_after_writing(request: dict):
        if len(request["messages"]) > 2:
            await anyio.sleep(3)
        return FakeReply(tool_calls=[WRITE])

    problems = resolve_set("demo")
    async with serve(slow_after_writing) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k", reply_timeout_s=10)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=tmp_path / "run", model=config.model, workers=1, verify=0, budget=1,
                          max_episodes=1, problem_ids=(PROBLEM,), episode_timeout_s=1.5)
        with anyio.fail_after(30):
            result = await solve(cfg, load_set(problems), model, model)
    assert result.charged == 0
    log = git(tmp_path / "run", "log", "--all", "--format=%s")
    assert "note(demo-odd-sum): incomplete: what e00001 had staged when it failed" in log
    body = git(tmp_path / "run", "log", "--all", "--grep=incomplete", "--format=%b")
    assert "episode wall-clock limit (2 s) reached" in body


@pytest.mark.anyio
async def test_an_episode_over_the_context_window_fails_alone_and_keeps_its_staged_work(tmp_path: Path):
    from gitswarm.fakeserver import FakeError

    too_long = FakeError(400, "This model's maximum context length is 8192 tokens. However, your messages "
                         "resulted in 9000 tokens.", code="context_length_exceeded")
    problems = resolve_set("demo")
    script = ScriptedResponder([FakeReply(tool_calls=[WRITE]), too_long, FakeReply(tool_calls=[WRITE]),
                                FakeReply(tool_calls=[CONTRIBUTE])])
    async with serve(script) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k", reply_timeout_s=5)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=tmp_path / "run", model=config.model, workers=1, verify=0, budget=1,
                          max_episodes=2, problem_ids=(PROBLEM,))
        with anyio.fail_after(60):
            result = await solve(cfg, load_set(problems), model, model)
    assert result.charged == 1 and str(result.reason.reason) == "budget"  # the run went on after the failure
    log = git(tmp_path / "run", "log", "--all", "--format=%s")
    assert "note(demo-odd-sum): incomplete: what e00001 had staged when it failed" in log
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory

    ledger = Ledger.load(Memory(tmp_path / "run"))
    failed, other = ledger.episodes["e00001"], ledger.episodes["e00002"]
    assert (failed.status, failed.failure) == ("failed", "context")  # its own class: not provider, not engine
    assert "context length exceeded: the conversation is longer than the model's context window" in failed.note
    assert "other episodes go on" in failed.note and other.status == "contribute" and other.failure == ""
    assert ledger.totals.failures() == {"provider": 0, "model": 0, "engine": 0, "context": 1}


@pytest.mark.anyio
async def test_an_empty_reply_that_generated_tokens_is_answered_not_retried_blind(tmp_path: Path):
    """Gemini's malformed function call arrives as an empty reply that did generate tokens: the
    model is told its call did not arrive well-formed, in the same conversation."""
    empty = FakeReply(content="", completion_tokens=120)
    record, server, _ = await one_episode(tmp_path, [empty, FakeReply(tool_calls=[WRITE]),
                                                     FakeReply(tool_calls=[CONTRIBUTE])])
    assert record.status == "contribute" and len(server.requests) == 3
    assert "did not arrive well-formed" in said(server, 1)
