"""The fake OpenAI-compatible server, spoken to with a plain HTTP client (httpx) on 127.0.0.1."""

from __future__ import annotations

import json
import time

import aiohttp
import anyio
import httpx
import pytest

from gitswarm.fakeserver import FakeReply, FaultPlan, ScriptedResponder, serve
from gitswarm.fakeserver.catalog import ANTHROPIC, Catalog
from gitswarm.models.lib import litellm_module

CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def events(text: str) -> list[str]:
    """The data lines of a server-sent-events body."""
    return [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]


@pytest.mark.anyio
async def test_keep_alive_models_and_errors() -> None:
    async def answer(body: dict) -> dict:
        return {"raw": True, "n": len(body["messages"])}

    with anyio.fail_after(10):
        async with serve(answer) as server, httpx.AsyncClient(base_url=server.url) as client:
            raw = await client.post("/chat/completions", json=CHAT)
            models = await client.get("/models")
            missing = await client.get("/nowhere")
            not_json = await client.post("/chat/completions", content=b"[1")
    assert raw.json() == {"raw": True, "n": 1}
    assert [m["id"] for m in models.json()["data"]] == ["fake-model"]
    assert missing.status_code == 404 and not_json.status_code == 400
    assert server.connections == 1 and len(server.requests) == 1


@pytest.mark.anyio
async def test_script_replays_in_order_then_reports_exhaustion() -> None:
    script = ScriptedResponder([FakeReply(content="one"), FakeReply(content="two")])
    with anyio.fail_after(10):
        async with serve(script) as server, httpx.AsyncClient(base_url=server.url) as client:
            replies = [await client.post("/chat/completions", json=CHAT) for _ in range(3)]
    assert [r.json()["choices"][0]["message"]["content"] for r in replies[:2]] == ["one", "two"]
    assert replies[2].status_code == 500 and "exhausted" in replies[2].json()["error"]["message"]


@pytest.mark.anyio
async def test_stream_carries_content_tool_calls_and_usage() -> None:
    reply = FakeReply(content="a" * 40, tool_calls=[{"name": "f", "arguments": {"x": 1}}], completion_tokens=9)
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    with anyio.fail_after(10):
        async with serve(lambda _: reply) as server, httpx.AsyncClient(base_url=server.url) as client:
            response = await client.post("/chat/completions", json=body)
    data = events(response.text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    calls = [c["choices"][0]["delta"]["tool_calls"] for c in chunks if c["choices"] and
             "tool_calls" in c["choices"][0]["delta"]]
    assert text == "a" * 40 and calls[0][0]["function"] == {"name": "f", "arguments": '{"x": 1}'}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"]["completion_tokens"] == 9


@pytest.mark.anyio
async def test_truncated_stream_is_cut_mid_way() -> None:
    body = {**CHAT, "stream": True}
    with anyio.fail_after(10):
        plan = FaultPlan.first("truncated_stream")
        async with serve(lambda _: FakeReply(content="x"), plan) as server, httpx.AsyncClient() as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.post(f"{server.url}/chat/completions", json=body)
    assert server.records[0].fault == "truncated_stream"


@pytest.mark.anyio
async def test_shutdown_does_not_wait_for_a_hanging_request() -> None:
    async def hang(client: httpx.AsyncClient, url: str) -> None:
        with pytest.raises(httpx.TransportError):  # the server went away without answering
            await client.post(f"{url}/chat/completions", json=CHAT)

    plan = FaultPlan.first("timeout")
    with anyio.fail_after(5):
        # The server stops first (innermost), then the group waits for the hanging client.
        async with httpx.AsyncClient(timeout=30) as client, anyio.create_task_group() as group, \
                serve(lambda _: FakeReply(content="x"), plan) as server:
            group.start_soon(hang, client, server.url)
            while not server.requests:
                await anyio.sleep(0.01)
    assert server.records[0].fault == "timeout" and server.records[0].status is None


@pytest.mark.anyio
async def test_hundreds_of_slow_requests_are_served_concurrently() -> None:
    # aiohttp, the transport litellm uses: httpx's own pool needs seconds for 256 connections.
    async def call(session: aiohttp.ClientSession, url: str) -> None:
        async with session.post(f"{url}/chat/completions", json=CHAT) as response:
            assert response.status == 200

    slow = FaultPlan(latency_s=3.0)  # room for 256 connections to open on a loaded machine (1 s: 163 once)
    with anyio.fail_after(20):
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=300)) as session, \
                serve(lambda _: FakeReply(content="x"), slow) as server:
            start = time.monotonic()
            async with anyio.create_task_group() as group:
                for _ in range(256):
                    group.start_soon(call, session, server.url)
            elapsed = time.monotonic() - start
    assert len(server.requests) == 256 and server.max_in_flight == 256
    assert elapsed < 6, f"256 concurrent requests of 3 s took {elapsed:.1f} s"


def test_fault_plan_is_deterministic_and_checked() -> None:
    plan = FaultPlan(rate=0.5, kinds=("rate_limit", "reset"), seed=7, at={0: "timeout", 1: None})
    draws = [plan.fault_for(i) for i in range(200)]
    assert draws == [FaultPlan(rate=0.5, kinds=("rate_limit", "reset"), seed=7,
                               at={0: "timeout", 1: None}).fault_for(i) for i in range(200)]
    assert draws[:2] == ["timeout", None] and set(draws[2:]) == {None, "rate_limit", "reset"}
    assert 60 < sum(d is not None for d in draws) < 140
    with pytest.raises(ValueError, match="unknown faults"):
        FaultPlan.first("gremlins")


ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-fake", "anthropic-version": "2023-06-01"}
MESSAGE = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "stream": True,
           "messages": [{"role": "user", "content": "hi"}]}


async def timed_stream(url: str, path: str, body: dict, headers: dict) -> tuple[list[bytes], list[float]]:
    """The chunks of a streamed reply and when each arrived (seconds after the request)."""
    chunks, times = [], []
    async with httpx.AsyncClient(base_url=url) as client:
        start = time.monotonic()
        async with client.stream("POST", path, json=body, headers=headers) as response:
            async for chunk in response.aiter_raw():
                chunks.append(chunk)
                times.append(time.monotonic() - start)
    return chunks, times


@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "path", "body", "keepalive"), [
    ("anthropic", "/v1/messages", MESSAGE, b"event: ping"),
    ("openai", "/chat/completions", {**CHAT, "stream": True}, b": keep-alive"),
])
async def test_slow_stream_trickles_deltas_and_keepalives(personality: str, path: str, body: dict,
                                                         keepalive: bytes) -> None:
    plan = FaultPlan.first("slow_stream", slow_stream_s=0.6, trickle_s=0.05)
    with anyio.fail_after(10):
        async with serve(lambda _: FakeReply(content="slow " * 8), plan, personality=personality) as server:
            chunks, times = await timed_stream(server.url, path, body, ANTHROPIC_HEADERS)
    text = b"".join(chunks)
    assert times[-1] >= 0.55 and len(chunks) >= 10 and text.count(keepalive) >= 3
    assert server.records[0].fault == "slow_stream" and server.charges  # delivered whole, so billed


@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "path", "body", "first"), [
    ("anthropic", "/v1/messages", MESSAGE, b"event: message_start"),
    ("openai", "/chat/completions", {**CHAT, "stream": True}, b'"role": "assistant"'),
])
async def test_stall_sends_the_first_event_then_nothing(personality: str, path: str, body: dict, first: bytes):
    received: list[bytes] = []
    with anyio.fail_after(10):
        async with serve(lambda _: FakeReply(content="x"), FaultPlan.first("stall"),
                         personality=personality) as server, \
                httpx.AsyncClient(base_url=server.url, timeout=httpx.Timeout(5, read=0.4)) as client:
            with pytest.raises(httpx.ReadTimeout):
                async with client.stream("POST", path, json=body, headers=ANTHROPIC_HEADERS) as response:
                    async for chunk in response.aiter_raw():
                        received.append(chunk)
    assert response.status_code == 200 and first in b"".join(received)
    assert b"[DONE]" not in b"".join(received) and b"message_stop" not in b"".join(received)
    assert server.records[0].fault == "stall" and server.charges == []


@pytest.mark.anyio
async def test_slow_stream_through_litellm_keeps_the_content() -> None:
    litellm = litellm_module()
    plan = FaultPlan.first("slow_stream", "slow_stream", slow_stream_s=0.3, trickle_s=0.05)
    texts = []
    with anyio.fail_after(20):
        async with serve(lambda _: FakeReply(content="a slow reply"), plan, personality="anthropic") as anthropic, \
                serve(lambda _: FakeReply(content="a slow reply"), plan) as openai:
            for model, url in (("anthropic/claude-sonnet-4-5", anthropic.url), ("openai/fake-model", openai.url)):
                start = time.monotonic()
                response = await litellm.acompletion(model=model, api_base=url, api_key="k", stream=True,
                                                     messages=[{"role": "user", "content": "hi"}], max_tokens=100)
                texts.append(("".join([c.choices[0].delta.content or "" async for c in response]),
                              time.monotonic() - start >= 0.25))
    assert texts == [("a slow reply", True)] * 2


def test_catalog_resolves_snapshots_and_overrides() -> None:
    table = Catalog(ANTHROPIC, {"claude-opus-4": 1000})
    assert table.spec("claude-opus-4-20250514").output_limit == 1000
    assert table.spec("claude-opus-4-1-20250805").output_limit == 32_000
    assert table.spec("claude-sonnet-4-5-20250929").input_usd == 3.0
    assert not table.spec("claude-opus-4-6").priced and table.spec("claude-opus-4-6").output_limit == 8192
