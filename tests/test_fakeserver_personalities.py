"""The fake server's personalities through the real litellm path (and httpx where the raw shape matters).

What these tests pin about litellm 1.110 (the rules themselves are in gitswarm.fakeserver):
- Anthropic: litellm appends /v1/messages to a custom api_base, so the api_base is the bare
  origin (`server.url`); a base ending in /v1 is asked for /v1/v1/messages. Without
  max_tokens litellm sends its model map's limit, or 128000 for a model not in its map.
- Thinking: litellm sends the thinking block (text and signature) back only from the
  assistant message's top-level `thinking_blocks`; `reasoning_content` and
  `provider_specific_fields` alone are not enough (in a stream the latter holds the
  signature with empty text), and without thinking_blocks the next tool turn is refused.
- litellm forwards `temperature` with thinking on; `reasoning_effort` becomes a thinking
  budget of 1024/2048/4096 with max_tokens budget + 4096, or the caller's max_tokens even
  when it is not above the budget.
- OpenAI: o-series and gpt-5 names get `max_completion_tokens`; an unknown name gets
  `max_tokens`; no stream asks for usage (`stream_options`) unless the caller does.
"""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from gitswarm.demo import brain
from gitswarm.fakeserver import FakeReply, FakeServer, FaultPlan, ScriptedResponder, serve
from gitswarm.models.lib import litellm_module

TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the memory.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
SYSTEM = {"role": "system", "content": "You are a careful worker."}
USER = {"role": "user", "content": "Read notes/a.md, then say what it says."}
READ = FakeReply(content="Let me look.", tool_calls=[{"name": "read_file", "arguments": {"path": "notes/a.md"}}],
                 thinking="The note will tell me.")
DONE = FakeReply(content="It says 7.", thinking="Now I know.")
CLAUDE = "anthropic/claude-sonnet-4-5"
THINKING = {"type": "enabled", "budget_tokens": 2048}
HEADERS = {"x-api-key": "sk-ant-fake", "anthropic-version": "2023-06-01"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def litellm():
    """litellm, imported once (seconds) outside the per-test time limits."""
    return litellm_module()


async def ask(litellm, server: FakeServer, model: str, messages: list[dict], **options):
    """One litellm.acompletion against the server; a stream is rebuilt into one response."""
    response = await litellm.acompletion(model=model, messages=messages, api_base=server.url, api_key="sk-fake",
                                         num_retries=0, max_retries=0, **options)
    if options.get("stream"):
        response = litellm.stream_chunk_builder([chunk async for chunk in response], messages=messages)
    return response


async def tool_loop(litellm, server: FakeServer, model: str, turns: int, keep=None, **options) -> list:
    """`turns` tool turns, each assistant message given back as litellm returned it (or only the
    fields in `keep`), each answered with a tool result; returns the responses."""
    messages, responses = [SYSTEM, USER], []
    for _ in range(turns + 1):
        response = await ask(litellm, server, model, messages, tools=TOOLS, **options)
        responses.append(response)
        message = response.choices[0].message.model_dump()
        if not message.get("tool_calls"):
            return responses
        if keep is not None:
            message = {k: v for k, v in message.items() if k in keep}
        messages += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "7"}]
    return responses


def raw(server: FakeServer, body: dict, headers: dict | None = None) -> httpx.Response:
    """POST an Anthropic-shaped body straight to /v1/messages."""
    with httpx.Client(base_url=server.url) as client:
        return client.post("/v1/messages", json=body, headers=HEADERS if headers is None else headers)


def claude_body(**fields) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}],
            **fields}


# --- anthropic ---------------------------------------------------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("personality", "model"), [
    ("openai", "openai/fake-model"), ("anthropic", CLAUDE), ("openai-reasoning", "openai/o4-mini")])
async def test_tool_round_trip(litellm, personality: str, model: str, stream: bool) -> None:
    with anyio.fail_after(20):
        async with serve(ScriptedResponder([READ, DONE]), personality=personality) as server:
            first, last = await tool_loop(litellm, server, model, 1, stream=stream, max_tokens=1000)
    assert server.rejections == [] and len(server.charges) == 2
    call = first.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("read_file", {"path": "notes/a.md"})
    assert first.choices[0].finish_reason == "tool_calls" and last.choices[0].message.content == "It says 7."


@pytest.mark.anyio
async def test_anthropic_url_and_wire_shape(litellm) -> None:
    async with serve(ScriptedResponder([READ, DONE]), personality="anthropic") as server:
        await tool_loop(litellm, server, CLAUDE, 1, max_tokens=1000)
    assert server.url == f"http://127.0.0.1:{server.port}"
    sent = server.requests[1]["messages"]
    assert sent[1]["content"][-1]["type"] == "tool_use" and sent[2]["content"][0]["type"] == "tool_result"
    assert all("thinking" not in b["type"] for b in sent[1]["content"])  # thinking was off


@pytest.mark.anyio
async def test_anthropic_responder_sees_openai_shape() -> None:
    seen: list[dict] = []

    def answer(request: dict) -> FakeReply:
        seen.append(request)
        return DONE

    body = claude_body(system=[{"type": "text", "text": "sys"}], tools=[
        {"name": "read_file", "description": "d", "input_schema": {"type": "object"}}], messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"p": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "7"}]}])
    async with serve(answer, personality="anthropic") as server:
        reply = await anyio.to_thread.run_sync(raw, server, body)
        missing = await anyio.to_thread.run_sync(lambda: httpx.get(f"{server.url}/v1/nowhere"))
    assert reply.status_code == 200 and reply.headers["request-id"].startswith("req_")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    assert [m["role"] for m in seen[0]["messages"]] == ["system", "user", "assistant", "tool"]
    assert seen[0]["messages"][2]["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"p": 1}'}
    assert seen[0]["tools"][0]["function"]["name"] == "read_file" and seen[0]["max_tokens"] == 4096


@pytest.mark.anyio
@pytest.mark.parametrize(("headers", "status", "kind", "message"), [
    ({"anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key header is required"),
    ({"x-api-key": "wrong", "anthropic-version": "2023-06-01"}, 401, "authentication_error", "invalid x-api-key"),
    ({"x-api-key": "sk-ant-fake"}, 400, "invalid_request_error", "anthropic-version: header is required"),
])
async def test_anthropic_headers_required(headers: dict, status: int, kind: str, message: str) -> None:
    async with serve(lambda _: DONE, personality="anthropic", api_key="sk-ant-fake") as server:
        reply = await anyio.to_thread.run_sync(raw, server, claude_body(), headers)
    body = reply.json()
    assert reply.status_code == status and body["type"] == "error" and body["request_id"].startswith("req_")
    assert body["error"] == {"type": kind, "message": message} and reply.headers["request-id"] == body["request_id"]
    assert [(r.status, r.message) for r in server.rejections] == [(status, message)]


@pytest.mark.anyio
async def test_anthropic_max_tokens_against_the_model_limit(litellm) -> None:
    async with serve(lambda _: DONE, personality="anthropic", output_limits={"claude-custom": 100}) as server:
        with pytest.raises(litellm.BadRequestError) as refused:  # litellm's max_tokens for a model not in its map
            await ask(litellm, server, "anthropic/claude-opus-4-20250514", [USER])
        missing = await anyio.to_thread.run_sync(raw, server, {"model": "claude-sonnet-4-5", "messages": []})
        custom = await anyio.to_thread.run_sync(raw, server, claude_body(model="claude-custom", max_tokens=101))
        unknown = await anyio.to_thread.run_sync(raw, server, claude_body(model="claude-next", max_tokens=8192))
    assert ("max_tokens: 128000 > 32000, which is the maximum allowed number of output tokens for "
            "claude-opus-4-20250514") in str(refused.value)
    assert missing.json()["error"]["message"] == "max_tokens: Field required"
    assert "101 > 100" in custom.json()["error"]["message"] and unknown.status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize(("fields", "message"), [
    ({"thinking": {"type": "enabled", "budget_tokens": 512}},
     "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    ({"thinking": {"type": "enabled", "budget_tokens": 4096}}, "`max_tokens` must be greater than"),
    ({"thinking": THINKING, "top_k": 5}, "`top_k` must be unset when thinking is enabled"),
    ({"thinking": THINKING, "top_p": 0.5}, "`top_p` must be greater than or equal to 0.95"),
    ({"thinking": THINKING, "tool_choice": {"type": "any"}},
     "Thinking may not be enabled when tool_choice forces tool use."),
    ({"cache_control": None, "system": [{"type": "text", "text": str(n), "cache_control": {"type": "ephemeral"}}
                                        for n in range(5)]},
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    ({"messages": [{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                   {"role": "user", "content": "go on"}]},
     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1. Each `tool_use` "
     "block must have a corresponding `tool_result` block in the next message."),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}]},
     "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t9."),
])
async def test_anthropic_rules_refused_in_its_words(fields: dict, message: str) -> None:
    async with serve(lambda _: DONE, personality="anthropic") as server:
        reply = await anyio.to_thread.run_sync(raw, server, claude_body(**{k: v for k, v in fields.items() if v}))
    assert reply.status_code == 400 and reply.json()["error"]["type"] == "invalid_request_error"
    assert reply.json()["error"]["message"].startswith(message)
    assert len(server.rejections) == 1 and server.records[0].rejected


@pytest.mark.anyio
async def test_what_litellm_sends_for_thinking_and_reasoning_effort(litellm) -> None:
    async with serve(lambda _: DONE, personality="anthropic") as server:
        with pytest.raises(litellm.BadRequestError, match="`temperature` may only be set to 1 when thinking"):
            await ask(litellm, server, CLAUDE, [USER], thinking=THINKING, max_tokens=4096, temperature=0.2)
        for effort in ("low", "medium", "high"):
            await ask(litellm, server, CLAUDE, [USER], reasoning_effort=effort)
        with pytest.raises(litellm.BadRequestError, match=r"`max_tokens` must be greater than `thinking\.budget"):
            await ask(litellm, server, CLAUDE, [USER], reasoning_effort="high", max_tokens=3000)
    assert server.requests[0]["temperature"] == 0.2  # not dropped with thinking on
    sent = [(b["thinking"]["budget_tokens"], b["max_tokens"]) for b in server.requests[1:]]
    assert sent == [(1024, 1024 + 4096), (2048, 2048 + 4096), (4096, 4096 + 4096), (4096, 3000)]


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_thinking_round_trip_with_two_tool_turns(litellm, stream: bool) -> None:
    script = ScriptedResponder([READ, READ, DONE])
    with anyio.fail_after(20):
        async with serve(script, personality="anthropic") as server:
            *_, last = await tool_loop(litellm, server, CLAUDE, 2, stream=stream, thinking=THINKING, max_tokens=4096)
    assert server.rejections == [] and last.choices[0].message.content == "It says 7."
    turns = [m for m in server.requests[2]["messages"] if m["role"] == "assistant"]
    assert len(turns) == 2 and all(t["content"][0]["type"] == "thinking" for t in turns)
    assert turns[0]["content"][0]["thinking"] == "The note will tell me." and turns[0]["content"][0]["signature"]
    assert last.choices[0].message.thinking_blocks[0]["thinking"] == "Now I know."


@pytest.mark.anyio
@pytest.mark.parametrize(("stream", "keep", "refusal"), [
    (False, ("role", "content", "tool_calls", "thinking_blocks"), None),
    (False, ("role", "content", "tool_calls", "reasoning_content", "provider_specific_fields"), "Expected `thinking`"),
    (True, ("role", "content", "tool_calls", "provider_specific_fields"), "Expected `thinking`"),
    (False, ("role", "content", "tool_calls"), "Expected `thinking` or `redacted_thinking`, but found `text`"),
])
async def test_which_fields_carry_the_thinking_back(litellm, stream: bool, keep: tuple, refusal: str | None) -> None:
    async with serve(ScriptedResponder([READ, DONE]), personality="anthropic") as server:
        run = tool_loop(litellm, server, CLAUDE, 1, keep=keep, stream=stream, thinking=THINKING, max_tokens=4096)
        if refusal is None:
            await run
        else:
            with pytest.raises(litellm.BadRequestError, match=refusal):
                await run
    assert [r.status for r in server.rejections] == ([] if refusal is None else [400])


@pytest.mark.anyio
async def test_a_tampered_thinking_block_is_refused(litellm) -> None:
    async with serve(ScriptedResponder([READ]), personality="anthropic") as server:
        first = await ask(litellm, server, CLAUDE, [USER], tools=TOOLS, thinking=THINKING, max_tokens=4096)
        message = first.choices[0].message.model_dump()
        message["thinking_blocks"][0]["thinking"] = "I was told to do this."
        answer = {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "7"}
        with pytest.raises(litellm.BadRequestError, match=r"messages\.1\.content\.0: Invalid `signature`"):
            await ask(litellm, server, CLAUDE, [USER, message, answer], tools=TOOLS, thinking=THINKING,
                      max_tokens=4096)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_cut_reply_stops_at_max_tokens_with_partial_input(litellm, stream: bool) -> None:
    long_call = FakeReply(tool_calls=[{"name": "read_file", "arguments": {"path": "notes/" + "a" * 40 + ".md"}}])
    async with serve(lambda _: long_call, FaultPlan.first("truncated"), personality="anthropic") as server:
        response = await ask(litellm, server, CLAUDE, [USER], tools=TOOLS, stream=stream, max_tokens=100)
    assert response.choices[0].finish_reason == "length"
    arguments = response.choices[0].message.tool_calls[0].function.arguments
    assert arguments.startswith('{"path": "notes/aaa') and not arguments.endswith('.md"}')


@pytest.mark.anyio
@pytest.mark.parametrize(("fault", "status", "kind", "error"), [
    ("rate_limit", 429, "rate_limit_error", "RateLimitError"),
    ("server_error", 529, "overloaded_error", "InternalServerError"),
])
async def test_anthropic_fault_errors(litellm, fault: str, status: int, kind: str, error: str) -> None:
    plan = FaultPlan.first(fault, fault, retry_after_s=2)
    async with serve(lambda _: DONE, plan, personality="anthropic") as server:
        reply = await anyio.to_thread.run_sync(raw, server, claude_body())
        with pytest.raises(getattr(litellm, error)):
            await ask(litellm, server, CLAUDE, [USER])
    assert reply.status_code == status and reply.json()["error"]["type"] == kind
    assert reply.headers.get("retry-after") == ("2" if fault == "rate_limit" else None)
    assert server.rejections == [] and server.injected[fault] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic_malformed_arguments(litellm, stream: bool) -> None:
    async with serve(lambda _: READ, FaultPlan.first("malformed_args"), personality="anthropic") as server:
        response = await ask(litellm, server, CLAUDE, [USER], tools=TOOLS, stream=stream, max_tokens=100)
    arguments = response.choices[0].message.tool_calls[0].function.arguments
    with pytest.raises((json.JSONDecodeError, AssertionError)):
        assert isinstance(json.loads(arguments), dict)  # not an arguments object the client can use
    assert server.records[0].fault == "malformed_args"


@pytest.mark.anyio
@pytest.mark.parametrize(("fault", "error"), [("reset", "InternalServerError"), ("timeout", "Timeout")])
async def test_anthropic_connection_faults(litellm, fault: str, error: str) -> None:
    with anyio.fail_after(10):
        async with serve(lambda _: DONE, FaultPlan.first(fault), personality="anthropic") as server:
            with pytest.raises(getattr(litellm, error)):
                await ask(litellm, server, CLAUDE, [USER], max_tokens=100, timeout=0.5)
    assert server.records[0].fault == fault and server.records[0].status is None


@pytest.mark.anyio
async def test_a_turn_may_start_with_redacted_thinking() -> None:
    async with serve(lambda _: DONE, personality="anthropic") as server:
        def turn(data: str) -> dict:
            return claude_body(thinking=THINKING, messages=[
                USER, {"role": "assistant", "content": [{"type": "redacted_thinking", "data": data},
                                                        {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "7"}]}])
        signed = await anyio.to_thread.run_sync(raw, server, turn(server.personality.signer.redact("hidden")))
        forged = await anyio.to_thread.run_sync(raw, server, turn("aGlkZGVu.Zm9yZ2Vk"))
    assert signed.status_code == 200 and signed.json()["content"][0]["type"] == "thinking"
    assert forged.json()["error"]["message"] == "messages.1.content.0: Invalid `signature` in `thinking` block"


# --- prompt caching and the bill ----------------------------------------------------------

LONG = "x" * 8000  # 2000 tokens at four characters a token
OK = FakeReply(content="ok", completion_tokens=10)


def cached_system(text: str) -> dict:
    return {"role": "system", "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]}


class Clock:
    """A clock the test moves by hand, for cache lifetimes."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cache_parts(response) -> tuple[int, int, int]:
    """(uncached input, cache writes, cache reads) as litellm reports them."""
    usage = response.usage
    return (usage.prompt_tokens - usage.cache_creation_input_tokens - usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens, usage.cache_read_input_tokens)


@pytest.mark.anyio
async def test_anthropic_cache_write_then_read_then_expiry(litellm) -> None:
    clock = Clock()
    async with serve(lambda _: OK, personality="anthropic", clock=clock) as server:
        first = await ask(litellm, server, CLAUDE, [cached_system(LONG), {"role": "user", "content": "hi"}])
        second = await ask(litellm, server, CLAUDE, [cached_system(LONG), {"role": "user", "content": "hello there"}])
        clock.now += 301  # past the 5-minute lifetime
        third = await ask(litellm, server, CLAUDE, [cached_system(LONG), {"role": "user", "content": "hi"}])
    assert [cache_parts(r) for r in (first, second, third)] == [(1, 2000, 0), (2, 0, 2000), (1, 2000, 0)]
    assert server.records[1].usage["input_tokens"] == 2 and server.records[1].usage["cache_read_input_tokens"] == 2000
    sonnet = (3.0, 3.75, 0.30, 15.0)  # USD per million: input, 5-minute cache write, cache read, output
    expected = [(1 * sonnet[0] + 2000 * sonnet[1] + 10 * sonnet[3]) / 1e6,
                (2 * sonnet[0] + 2000 * sonnet[2] + 10 * sonnet[3]) / 1e6,
                (1 * sonnet[0] + 2000 * sonnet[1] + 10 * sonnet[3]) / 1e6]
    assert [c.usd for c in server.charges] == pytest.approx(expected)
    assert server.bill_usd() == pytest.approx(0.007653 + 0.000756 + 0.007653)


@pytest.mark.anyio
async def test_anthropic_cache_minimum_lookback_and_one_hour_ttl(litellm) -> None:
    medium = "y" * 6000  # 1500 tokens: cacheable on Sonnet (1024), not on Haiku 3.5 (2048)
    async with serve(lambda _: OK, personality="anthropic") as server:
        haiku = await ask(litellm, server, "anthropic/claude-3-5-haiku-20241022", [cached_system(medium), USER],
                          max_tokens=1000)  # litellm's default for a model it does not know is 128000
        short = await ask(litellm, server, CLAUDE, [cached_system("short"), USER])
        await ask(litellm, server, CLAUDE, [cached_system(medium), USER])
        later = await ask(litellm, server, CLAUDE, [{"role": "system", "content": medium}, {"role": "user", "content": [
            {"type": "text", "text": USER["content"], "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}])
    assert cache_parts(haiku)[1:] == (0, 0) and cache_parts(short)[1:] == (0, 0)
    assert cache_parts(later) == (0, 9, 1500)  # the system prefix found by looking back from the new breakpoint
    assert server.records[-1].usage["cache_creation"] == {"ephemeral_5m_input_tokens": 0,
                                                         "ephemeral_1h_input_tokens": 9}
    assert server.charges[-1].usd == pytest.approx((9 * 6.0 + 1500 * 0.30 + 10 * 15.0) / 1e6)


# --- openai-reasoning ------------------------------------------------------------------------

def chat(server: FakeServer, body: dict) -> httpx.Response:
    """POST a chat-completions body straight to the server."""
    with httpx.Client(base_url=server.url) as client:
        return client.post("/chat/completions", json=body, headers={"Authorization": "Bearer sk-fake"})


@pytest.mark.anyio
@pytest.mark.parametrize(("fields", "param", "code", "message"), [
    ({"max_tokens": 100}, "max_tokens", "unsupported_parameter",
     "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."),
    ({"temperature": 0.2}, "temperature", "unsupported_value",
     "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."),
    ({"top_p": 0.9}, "top_p", "unsupported_parameter", "Unsupported parameter: 'top_p' is not supported"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort", "invalid_value",
     "Invalid value: 'extreme'. Supported values are: 'low', 'medium', and 'high'."),
    ({"reasoning_effort": "minimal"}, "reasoning_effort", "unsupported_value",
     "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model."),
    ({"max_completion_tokens": 200_000}, "max_completion_tokens", None,
     "max_completion_tokens is too large: 200000. This model supports at most 100000 completion tokens"),
])
async def test_reasoning_rules_refused_in_openai_words(fields: dict, param: str, code: str | None,
                                                      message: str) -> None:
    body = {"model": "o3", "messages": [USER], **fields}
    async with serve(lambda _: DONE, personality="openai-reasoning") as server:
        reply = await anyio.to_thread.run_sync(chat, server, body)
    error = reply.json()["error"]
    assert reply.status_code == 400 and error["message"].startswith(message)
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert [r.status for r in server.rejections] == [400]


@pytest.mark.anyio
async def test_reasoning_names_litellm_maps_and_those_it_does_not(litellm) -> None:
    async with serve(lambda _: DONE, personality="openai-reasoning") as server:
        for model in ("openai/o3", "openai/o4-mini", "openai/gpt-5-mini"):
            await ask(litellm, server, model, [USER], max_tokens=500, reasoning_effort="low", temperature=1)
        with pytest.raises(litellm.BadRequestError, match="Use 'max_completion_tokens' instead"):
            await ask(litellm, server, "openai/my-reasoner", [USER], max_tokens=500)
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in server.requests[:3]] == [(False, 500)] * 3
    assert server.requests[3]["max_tokens"] == 500 and len(server.rejections) == 1


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # litellm's own pydantic use
async def test_reasoning_usage_and_stream_usage_only_on_request(litellm) -> None:
    reply = FakeReply(content="It says 7.", reasoning_tokens=300)
    async with serve(lambda _: reply, personality="openai-reasoning") as server:
        plain = await ask(litellm, server, "openai/o4-mini", [USER])
        body = {"model": "o4-mini", "messages": [USER], "stream": True}
        bare = await anyio.to_thread.run_sync(chat, server, body)
        asked = await anyio.to_thread.run_sync(chat, server, {**body, "stream_options": {"include_usage": True}})
        streamed = await ask(litellm, server, "openai/o4-mini", [USER], stream=True,
                             stream_options={"include_usage": True})
    assert plain.usage.completion_tokens_details.reasoning_tokens == 300
    assert plain.usage.completion_tokens == 300 + len("It says 7.") // 4
    assert '"usage"' not in bare.text and '"reasoning_tokens": 300' in asked.text
    assert streamed.usage.completion_tokens_details.reasoning_tokens == 300
    assert "stream_options" not in server.requests[0]


@pytest.mark.anyio
async def test_reasoning_automatic_prefix_cache_and_bill(litellm) -> None:
    document = {"role": "user", "content": "z" * 8000}
    reply = FakeReply(content="ok", completion_tokens=20)
    async with serve(lambda _: reply, personality="openai-reasoning") as server:
        short = await ask(litellm, server, "openai/o4-mini", [USER])
        first = await ask(litellm, server, "openai/o4-mini", [document, USER])
        second = await ask(litellm, server, "openai/o4-mini", [document, {"role": "user", "content": "And then?"}])
    cached = [r.usage.prompt_tokens_details.cached_tokens for r in (short, first, second)]
    assert cached[:2] == [0, 0] and cached[2] >= 1024 and cached[2] % 128 == 0
    assert cached[2] > second.usage.prompt_tokens - 128  # all but the unshared tail
    prompt = second.usage.prompt_tokens
    assert server.charges[2].usd == pytest.approx(((prompt - cached[2]) * 1.10 + cached[2] * 0.275 + 20 * 4.40) / 1e6)


# --- local-no-tools --------------------------------------------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_local_model_refuses_tools_and_answers_text(litellm, stream: bool) -> None:
    async with serve(ScriptedResponder([DONE]), personality="local-no-tools") as server:
        with pytest.raises(litellm.BadRequestError,
                           match=r"registry\.ollama\.ai/library/llama3:latest does not support tools"):
            await ask(litellm, server, "openai/llama3", [USER], tools=TOOLS, stream=stream)
        text = await ask(litellm, server, "openai/llama3", [USER], stream=stream, max_tokens=1000)
        refused = await anyio.to_thread.run_sync(chat, server, {"model": "qwen3:8b", "messages": [USER],
                                                                "tools": TOOLS})
    assert text.choices[0].message.content == "It says 7."
    assert refused.json() == {"error": {"message": "registry.ollama.ai/library/qwen3:8b does not support tools",
                                        "type": "api_error", "param": None, "code": None}}
    assert len(server.rejections) == 2 and server.bill_usd() == 0 and not server.charges[0].priced


@pytest.mark.anyio
async def test_local_model_output_limit(litellm) -> None:
    async with serve(lambda _: DONE, personality="local-no-tools", output_limits={"llama3": 2048}) as server:
        with pytest.raises(litellm.BadRequestError) as refused:
            await ask(litellm, server, "openai/llama3", [USER], max_tokens=4096)
        default = await anyio.to_thread.run_sync(chat, server, {"model": "mistral", "messages": [USER],
                                                                "max_tokens": 9000})
        fits = await ask(litellm, server, "openai/llama3", [USER], max_tokens=2048)
    assert ("max_tokens is too large: 4096. This model supports at most 2048 completion tokens, whereas you "
            "provided 4096.") in str(refused.value)
    assert default.json()["error"]["param"] == "max_tokens" and "at most 8192" in default.json()["error"]["message"]
    assert fits.choices[0].message.content == "It says 7."


# --- the demo's scripted model over every personality ----------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "model", "tools"), [
    ("openai", "openai/fake-model", True), ("anthropic", CLAUDE, True), ("openai-reasoning", "openai/gpt-5", True),
    ("local-no-tools", "openai/llama3", False), ("anthropic", CLAUDE, False)])
async def test_the_demo_brain_works_over_every_personality(litellm, personality: str, model: str, tools: bool):
    state = {"role": "user", "content": "problem: p1 (proof)\nepisode: e-1\n\n| notes/a.md | 1234567 |"}
    merge = {"role": "user", "content": '<memory-data source="ours x">\nA\n</memory-data>\n'
             '<memory-data source="theirs y">\nB\n</memory-data>'}
    async with serve(brain.respond, personality=personality) as server:
        options = {"tools": TOOLS} if tools else {}
        response = await ask(litellm, server, model, [SYSTEM, state if tools else merge], max_tokens=2000, **options)
    message = response.choices[0].message
    assert server.rejections == []
    assert (message.tool_calls[0].function.name == "read_file") if tools else message.content == "A\nB\n"
