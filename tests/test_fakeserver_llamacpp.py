"""The `llama-cpp` personality: llama-cpp-python's server as its code behaves, through the real
litellm path (and httpx where the raw stream matters).

What these tests pin (llama_cpp/server/app.py and llama_chat_format.py): chatml-function-calling
leaves the tools out of a request without tool_choice, calls them unstreamed with "auto", fails
a streamed "auto" call with a 500, forces a named one streamed or not, and fails "required";
functionary calls tools unstreamed only; streams carry no usage; one reply at a time, and a
stream in progress ends with [DONE] and no finish_reason when another request waits.
"""

from __future__ import annotations

import json
import time

import anyio
import httpx
import pytest

from gitswarm.fakeserver import FakeReply, FakeServer, serve
from gitswarm.fakeserver.llamacpp import STREAMED_AUTO
from gitswarm.models.lib import litellm_module

TOOLS = [{"type": "function", "function": {
    "name": "ping", "description": "Answer the check.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}]
USER = [{"role": "user", "content": "Call ping with the word hello."}]
CALL = FakeReply(content="Calling.", tool_calls=[{"name": "ping", "arguments": {"word": "hello"}}])
MODEL = "openai/qwen2.5-3b"
FORCED = {"type": "function", "function": {"name": "ping"}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def litellm():
    """litellm, imported once (seconds) outside the per-test time limits."""
    return litellm_module()


def model(seen: list[dict], reply: FakeReply = CALL):
    """A model that calls ping whenever it is shown tools, else writes text; keeps what it saw."""
    def answer(request: dict) -> FakeReply:
        seen.append(request)
        return reply if request.get("tools") else FakeReply(content="I see no tool to call.")
    return answer


async def ask(litellm, server: FakeServer, **options):
    """One litellm.acompletion; a stream is rebuilt into one response."""
    response = await litellm.acompletion(model=MODEL, messages=USER, api_base=server.url, api_key="sk-local",
                                         num_retries=0, max_retries=0, **options)
    if options.get("stream"):
        response = litellm.stream_chunk_builder([chunk async for chunk in response], messages=USER)
    return response


async def raw(server: FakeServer, headers: dict | None = None, **fields) -> httpx.Response:
    """POST a chat request straight to the server; a stream is read whole."""
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        return await client.post("/chat/completions", json={"model": "qwen", "messages": USER, **fields},
                                 headers=headers)


def chunks(response: httpx.Response) -> list:
    """The data of each server-sent event, JSON decoded but for [DONE]."""
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [d if d == "[DONE]" else json.loads(d) for d in data]


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_without_tool_choice_the_model_never_sees_the_tools(litellm, stream: bool) -> None:
    seen: list[dict] = []
    async with serve(model(seen), personality="llama-cpp") as server:
        response = await ask(litellm, server, tools=TOOLS, stream=stream)
    message = response.choices[0].message
    assert message.content == "I see no tool to call." and not message.tool_calls
    assert "tools" not in seen[0] and server.rejections == []


@pytest.mark.anyio
async def test_a_call_the_model_makes_without_tools_offered_is_dropped() -> None:
    """A scripted call where chatml-function-calling offered no tools: the server parses none."""
    async with serve(lambda request: FakeReply(tool_calls=CALL.tool_calls), personality="llama-cpp") as server:
        streamed = chunks(await raw(server, tools=TOOLS, stream=True))
        plain = (await raw(server, tools=TOOLS)).json()
    assert [c["choices"][0]["delta"] for c in streamed[:-1]] == [{"role": "assistant"}, {}]
    assert streamed[-2]["choices"][0]["finish_reason"] == "stop" and streamed[-1] == "[DONE]"
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": ""}


@pytest.mark.anyio
async def test_auto_calls_unstreamed_and_is_a_500_streamed(litellm) -> None:
    seen: list[dict] = []
    async with serve(model(seen), personality="llama-cpp") as server:
        plain = (await raw(server, tools=TOOLS, tool_choice="auto")).json()
        with pytest.raises(litellm.exceptions.InternalServerError, match=STREAMED_AUTO):
            await ask(litellm, server, tools=TOOLS, tool_choice="auto", stream=True)
    message = plain["choices"][0]["message"]
    assert message["content"] is None and plain["choices"][0]["finish_reason"] == "tool_calls"
    call = message["tool_calls"][0]
    assert call["id"].startswith("call__0_ping_cmpl-") and message["function_call"] == call["function"]
    assert json.loads(call["function"]["arguments"]) == {"word": "hello"}
    assert plain["usage"]["completion_tokens"] > 0 and plain["id"].startswith("chatcmpl-")
    assert seen[0]["tools"] == TOOLS and [r.status for r in server.records] == [200, 500]


@pytest.mark.anyio
async def test_auto_streams_a_message_the_model_chose(litellm) -> None:
    async with serve(lambda request: FakeReply(content="No call needed."), personality="llama-cpp") as server:
        response = await ask(litellm, server, tools=TOOLS, tool_choice="auto", stream=True)
    assert response.choices[0].message.content == "No call needed."


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_named_tool_is_forced_streamed_or_not(litellm, stream: bool) -> None:
    async with serve(lambda request: FakeReply(content="Sure."), personality="llama-cpp") as server:
        response = await ask(litellm, server, tools=TOOLS, tool_choice=FORCED, stream=stream)
        events = chunks(await raw(server, tools=TOOLS, tool_choice=FORCED, stream=True))
    calls = response.choices[0].message.tool_calls
    assert [(c.function.name, c.function.arguments) for c in calls] == [("ping", "{}")]
    assert response.choices[0].finish_reason == "tool_calls"
    deltas = [e["choices"][0]["delta"] for e in events[1:-2]]
    assert deltas and all(d["tool_calls"][0]["function"]["name"] == "ping" for d in deltas)  # repeated each chunk
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.anyio
async def test_required_and_unknown_names_are_500s_before_generation() -> None:
    seen: list[dict] = []
    async with serve(model(seen), personality="llama-cpp") as server:
        required = await raw(server, tools=TOOLS, tool_choice="required")
        unknown = await raw(server, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "pong"}})
    assert required.status_code == 500 and required.json()["error"] == {
        "message": "", "type": "internal_server_error", "param": None, "code": None}
    assert unknown.json()["error"]["message"] == "Tool with name 'pong' not found in tools"
    assert seen == [] and [r.status for r in server.rejections] == [500, 500]


@pytest.mark.anyio
async def test_streams_carry_no_usage_even_when_asked() -> None:
    async with serve(lambda request: FakeReply(content="Hello there."), personality="llama-cpp") as server:
        events = chunks(await raw(server, stream=True, stream_options={"include_usage": True}))
        plain = (await raw(server)).json()
    assert all("usage" not in e for e in events[:-1]) and events[-1] == "[DONE]"
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1]) == "Hello there."
    assert plain["usage"] == {"prompt_tokens": server.records[1].usage["prompt_tokens"], "completion_tokens": 3,
                              "total_tokens": plain["usage"]["prompt_tokens"] + 3}


@pytest.mark.anyio
async def test_functionary_calls_tools_unstreamed_only(litellm) -> None:
    seen: list[dict] = []
    async with serve(model(seen), personality="llama-cpp", chat_format="functionary") as server:
        plain = await ask(litellm, server, tools=TOOLS)
        named = (await raw(server, tools=TOOLS, tool_choice="required")).json()
        streamed = await raw(server, tools=TOOLS, stream=True)
    call = plain.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name) == ("ping", "ping")  # the call's id is its name
    assert named["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "required"
    assert streamed.status_code == 500 and streamed.json()["error"]["message"] == ""
    assert len(seen) == 3  # the streamed one was generated, then refused


@pytest.mark.anyio
async def test_a_wrong_key_is_a_500() -> None:
    async with serve(model([]), personality="llama-cpp", api_key="local-secret") as server:
        wrong = await raw(server)
        right = await raw(server, headers={"Authorization": "Bearer local-secret"})
    assert wrong.status_code == 500 and wrong.json()["error"]["message"] == "401: Invalid API key"
    assert right.status_code == 200


@pytest.mark.anyio
async def test_a_message_without_content_fails_its_template() -> None:
    turn = [*USER, {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]}]
    async with serve(model([]), personality="llama-cpp") as server:
        response = await raw(server, messages=turn)
    assert response.status_code == 500
    assert response.json()["error"]["message"] == "'dict object' has no attribute 'content'"


def test_an_unknown_chat_format_is_refused() -> None:
    async def start() -> None:
        async with serve(model([]), personality="llama-cpp", chat_format="chatml"):
            pass

    with pytest.raises(ValueError, match="unknown chat format 'chatml'"):
        anyio.run(start)


async def _timed_stream(server: FakeServer, log: list, delay: float = 0.0) -> None:
    await anyio.sleep(delay)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        start = time.monotonic()
        response = await client.post("/chat/completions", json={"model": "q", "messages": USER, "stream": True})
        log.append((delay, start, time.monotonic(), chunks(response)))


@pytest.mark.anyio
@pytest.mark.parametrize("interrupt", [True, False])
async def test_a_waiting_request_cuts_the_stream_in_progress(interrupt: bool) -> None:
    long = FakeReply(content="word " * 40)  # 50 tokens: a second at 50 tokens/s
    log: list = []
    with anyio.fail_after(20):
        async with serve(lambda request: long, personality="llama-cpp", tokens_per_s=50,
                         interrupt_requests=interrupt) as server:
            async with anyio.create_task_group() as group:
                group.start_soon(_timed_stream, server, log, 0.0)
                group.start_soon(_timed_stream, server, log, 0.3)
    (_, _, first_end, first), (_, _, second_end, second) = sorted(log, key=lambda entry: entry[0])
    assert second[-2]["choices"][0]["finish_reason"] == "stop"  # the later one is whole
    assert first[-1] == "[DONE]" and first_end < second_end
    finishes = [e["choices"][0]["finish_reason"] for e in first[:-1]]
    if interrupt:
        assert finishes and set(finishes) == {None} and len(first) < len(second)  # cut: no finish_reason
        assert [r.interrupted for r in server.records] == [True, False] and len(server.charges) == 1
    else:
        assert finishes[-1] == "stop" and len(first) == len(second)
        assert not any(r.interrupted for r in server.records) and second_end - first_end > 0.5  # waited its turn


@pytest.mark.anyio
async def test_an_unstreamed_reply_is_never_interrupted() -> None:
    long = FakeReply(content="word " * 40)
    results: list = []

    async def unstreamed() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            results.append((await client.post("/chat/completions", json={"model": "q", "messages": USER})).json())

    with anyio.fail_after(20):
        async with serve(lambda request: long, personality="llama-cpp", tokens_per_s=50) as server:
            async with anyio.create_task_group() as group:
                group.start_soon(unstreamed)
                group.start_soon(_timed_stream, server, [], 0.3)
    assert results[0]["choices"][0]["finish_reason"] == "stop" and not any(r.interrupted for r in server.records)
