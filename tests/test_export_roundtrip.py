"""Round trip: an exported episode's requests, sent again, are the requests the episode made.

A real episode runs through the engine, litellm and the fake server; `gitswarm export --format
steps` writes it out; then each step's `context`, `tools` and `request` arguments go through
`litellm.acompletion` to a fresh fake server scripted with the replies the export holds. The
requests that server receives must be, call by call, the bodies the first server received
(messages, tools, tool call ids, tool_choice, output limit, streaming, thinking), and its
replies must make the tool calls the export says the model made (ids, names, arguments as sent).

The cases: native tool calls with a failed attempt retried and a prose reply that made the
engine force a tool call (its `tool_choice` differs from the other calls': a per-call argument
the episode's `params` cannot stand in for); the text protocol the client turns to after
prose; Anthropic's Messages API with signed thinking blocks sent back in later requests."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import openai
import pytest
from test_conversation import CONTRIBUTE, KEY, WRITE, one_episode
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.fakeserver import FakeError, FakeReply, ScriptedResponder, serve
from gitswarm.models.lib import litellm_module
from gitswarm.models.textproto import format_calls

SECRET = b"one provider's signing key"

PROSE = FakeReply(content="Let me think about the parity of the sum first.")
SERVER_ERROR = FakeError(500, "the server had an error")
THOUGHT = "Odd numbers add up to squares; write it down, then contribute."


def text_call(call: dict) -> FakeReply:
    """A reply writing `call` in the text protocol."""
    return FakeReply(content=format_calls([(call["name"], call["arguments"])]))


CASES = {
    "native": ("openai", {}, [SERVER_ERROR, PROSE, FakeReply(tool_calls=[WRITE]), FakeReply(tool_calls=[CONTRIBUTE])]),
    "text": ("openai", {}, [PROSE, PROSE, text_call(WRITE), text_call(CONTRIBUTE)]),
    "anthropic": ("anthropic", {"model_name": "anthropic/claude-sonnet-4-5", "reasoning_effort": "low"},
                  [FakeReply(tool_calls=[WRITE], thinking=THOUGHT),
                   FakeReply(tool_calls=[CONTRIBUTE], thinking=THOUGHT)]),
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def exported_steps(run: Path, out: Path) -> list[dict]:
    done = CliRunner().invoke(app, ["export", str(run), "--format", "steps", "--out", str(out)])
    assert done.exit_code == 0, done.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def scripted(step: dict) -> FakeReply | FakeError:
    """The reply the export says this call got, for the fake to give again."""
    raw = step["raw_reply"]
    if raw is None:
        return FakeError(500, step["error"])
    thinking = next((b.get("thinking") for b in raw["thinking"] if b.get("type") == "thinking"), None)
    return FakeReply(content=raw["content"] or "", finish_reason=raw["finish_reason"], thinking=thinking,
                     tool_calls=[{"name": c["name"], "arguments": c["arguments"]} for c in raw["tool_calls"]])


async def replay(step: dict, url: str) -> dict | None:
    """Send the step's request as the export holds it; the reply as the record keeps one, or None
    when the call failed."""
    args = {**step["request"], "messages": step["context"], "api_base": url, "api_key": KEY, "timeout": 10}
    if step["tools"]:
        args["tools"] = step["tools"]
    try:
        litellm = litellm_module()  # offline: litellm's price map from its package, no fetch
        response = await litellm.acompletion(**args)
        if args.get("stream"):
            response = litellm.stream_chunk_builder([chunk async for chunk in response], messages=step["context"])
    except openai.OpenAIError:
        return None
    message = response.choices[0].message
    return {"content": message.content,
            "tool_calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                           for c in message.tool_calls or []],
            "thinking": [dict(b) for b in getattr(message, "thinking_blocks", None) or []]}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(CASES))
async def test_replaying_the_exported_requests_makes_the_same_calls(tmp_path: Path, case: str):
    personality, settings, replies = CASES[case]
    # One provider signs its thinking with one key, request after request: both servers share it.
    first = await one_episode(tmp_path / "run", replies, personality=personality, secret=SECRET, **settings)
    assert first.rejections == []
    steps = exported_steps(tmp_path / "run", tmp_path / "steps.jsonl")
    assert [s["step"] for s in steps] == list(range(1, len(first.requests) + 1))
    async with serve(ScriptedResponder([scripted(s) for s in steps]), personality=personality,
                     secret=SECRET) as again:
        with anyio.fail_after(60):
            answers = [await replay(step, again.url) for step in steps]
    assert again.rejections == []
    for n, (sent, resent) in enumerate(zip(first.requests, again.requests, strict=True), 1):
        assert resent == sent, f"step {n}: the replayed request differs from the one the episode made"
    for step, answer in zip(steps, answers, strict=True):
        raw = step["raw_reply"]
        assert (answer is None) == (raw is None), step["step"]
        if raw is not None:
            assert answer["tool_calls"] == raw["tool_calls"] and (answer["content"] or "") == (raw["content"] or "")
            assert [(b.get("thinking"), b.get("signature")) for b in answer["thinking"]] == [
                (b.get("thinking"), b.get("signature")) for b in raw["thinking"]]
    kinds = {"native": {"auto", "required"}, "text": {"auto", "required", None}, "anthropic": {"auto"}}[case]
    assert {s["request"].get("tool_choice") for s in steps} == kinds
    assert all(s["tools"] == [] for s in steps if s["protocol"] == "text")
