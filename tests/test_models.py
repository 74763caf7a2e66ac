"""LiteLLMModel through real litellm against the fake OpenAI-compatible server on 127.0.0.1.

What litellm does with each failure (pinned by these tests, litellm 1.110): with
num_retries=0 it and the OpenAI SDK send exactly one request; a 429 keeps its Retry-After
headers on `exc.response.headers`; a 403 arrives as a plain APIError, and a dropped
connection or a body that is not JSON as InternalServerError, so the models module reads
the exception's causes and status to tell them apart.
"""

from __future__ import annotations

import time

import anyio
import pytest

from gitswarm.errors import BadInput
from gitswarm.fakeserver import FakeError, FakeReply, FakeServer, FaultPlan, ScriptedResponder, serve
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.models.credentials import credentials_hint, has_price
from gitswarm.models.errors import ModelError, backoff_delay
from gitswarm.usage import Usage

USER = [{"role": "user", "content": "What is 3 + 4?"}]
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the memory.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
READ = FakeReply(content="Let me look.", tool_calls=[{"name": "read_file", "arguments": {"path": "notes/a.md"}}])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def litellm_imported() -> None:
    """Pay litellm's import (seconds) once, outside the per-test time limits."""
    has_price(ModelConfig("openai/fake-model"))


def model(server: FakeServer, **options) -> LiteLLMModel:
    """The model under test, pointed at `server`, with tiny backoff delays unless overridden."""
    settings = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, **options}
    return LiteLLMModel(ModelConfig("openai/fake-model", api_base=server.url, api_key="sk-fake", **settings))


@pytest.mark.anyio
async def test_plain_reply() -> None:
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="7")])) as server:
            reply = await model(server).complete(USER)
    assert (reply.content, reply.tool_calls, reply.finish_reason) == ("7", [], "stop")
    assert reply.message == {"role": "assistant", "content": "7"}
    assert server.requests[0]["messages"] == USER
    assert server.requests[0]["model"] == "fake-model"
    assert "tools" not in server.requests[0]


@pytest.mark.anyio
async def test_tool_calls_parsed_and_message_replays() -> None:
    script = ScriptedResponder([READ, FakeReply(content="Done.")])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server)
            reply = await llm.complete(USER, TOOLS)
            result = {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "a note"}
            await llm.complete([*USER, reply.message, result], TOOLS)
    call = reply.tool_calls[0]
    assert (call.name, call.arguments, call.error) == ("read_file", {"path": "notes/a.md"}, None)
    assert reply.finish_reason == "tool_calls" and reply.content == "Let me look."
    assert reply.message["tool_calls"][0]["function"] == {"name": "read_file", "arguments": call.raw_arguments}
    assert server.requests[0]["tools"] == TOOLS
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == call.id and sent[2]["tool_call_id"] == call.id


@pytest.mark.anyio
async def test_malformed_tool_arguments_are_reported_not_raised() -> None:
    not_object = FakeReply(tool_calls=[{"name": "read_file", "arguments": "[1, 2]"}])
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([READ, not_object]), FaultPlan.first("malformed_args")) as server:
            broken = await model(server).complete(USER, TOOLS)
            listed = await model(server).complete(USER, TOOLS)
    call = broken.tool_calls[0]
    assert call.arguments is None and "not valid JSON" in (call.error or "")
    assert call.raw_arguments.startswith('{"read_file"') and server.records[0].fault == "malformed_args"
    assert listed.tool_calls[0].error == "the arguments are a JSON list, not an object"
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_rate_limit_retried_honouring_retry_after() -> None:
    plan = FaultPlan.first("rate_limit", retry_after_s=0.4)
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="7")]), plan) as server:
            start = time.monotonic()
            reply = await model(server, backoff_cap_s=1.0).complete(USER)
            waited = time.monotonic() - start
    assert reply.content == "7"
    assert [r.status for r in server.records] == [429, 200]
    assert waited >= 0.4


@pytest.mark.anyio
async def test_retry_after_is_bounded_by_the_cap() -> None:
    plan = FaultPlan.first("rate_limit", retry_after_s=600)
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="7")]), plan) as server:
            reply = await model(server, backoff_cap_s=0.1).complete(USER)
    assert reply.content == "7" and len(server.requests) == 2


@pytest.mark.anyio
@pytest.mark.parametrize("faults", [
    ("server_error", "server_error"), ("unavailable",), ("reset",), ("malformed_json",), ("empty",),
    ("truncated_stream",), ("rate_limit", "reset", "server_error"),
])
async def test_transient_faults_retried_then_success(faults: tuple[str, ...]) -> None:
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="7")]), FaultPlan.first(*faults)) as server:
            reply = await model(server).complete(USER)
    assert reply.content == "7"
    assert len(server.requests) == len(faults) + 1
    assert [r.fault for r in server.records] == [*faults, None]


@pytest.mark.anyio
async def test_a_timeout_is_retried_once_then_model_error() -> None:
    """Each retry of a timeout is a whole new generation, billed again: one retry at most,
    however many the other transient failures get; both attempts are in the error's usage."""
    always = FaultPlan(rate=1.0, kinds=("timeout",))
    with anyio.fail_after(15):
        async with serve(ScriptedResponder([]), always) as server:
            with pytest.raises(ModelError) as caught:
                await model(server, reply_timeout_s=0.5, max_retries=4).complete(USER)
    assert (caught.value.kind, caught.value.retryable, caught.value.attempts) == ("timeout", True, 2)
    assert len(server.requests) == 2
    assert (caught.value.usage.calls, caught.value.usage.failed_calls) == (2, 2)


@pytest.mark.anyio
async def test_server_errors_until_retries_are_spent() -> None:
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([]), FaultPlan(rate=1.0, kinds=("server_error",))) as server:
            with pytest.raises(ModelError) as caught:
                await model(server, max_retries=3).complete(USER)
    assert (caught.value.kind, caught.value.retryable, caught.value.attempts) == ("server", True, 4)
    assert len(server.requests) == 4


@pytest.mark.anyio
@pytest.mark.parametrize(("error", "kind"), [
    (FakeError(401, "Incorrect API key provided", code="invalid_api_key"), "auth"),
    (FakeError(403, "Project lacks access", "permission_error"), "permission"),
    (FakeError(404, "The model does not exist", code="model_not_found"), "not_found"),
    (FakeError(400, "This model's maximum context length is 8192 tokens. However, your messages "
                    "resulted in 9001 tokens.", code="context_length_exceeded"), "context_window"),
    (FakeError(400, "Rejected by the safety system.", code="content_policy_violation"), "content_policy"),
    (FakeError(400, "Invalid value for 'messages'."), "bad_request"),
    (FakeError(429, "You exceeded your current quota.", "insufficient_quota", "insufficient_quota"), "quota"),
])
async def test_permanent_errors_are_not_retried(error: FakeError, kind: str) -> None:
    with anyio.fail_after(10):
        async with serve(lambda body: error) as server:
            with pytest.raises(ModelError) as caught:
                await model(server).complete(USER)
    assert (caught.value.kind, caught.value.retryable, caught.value.attempts) == (kind, False, 1)
    assert error.message in caught.value.message
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_usage_counted_and_cost_unknown_without_a_price() -> None:
    with anyio.fail_after(10):
        async with serve(lambda body: FakeReply(content="7", prompt_tokens=1200, completion_tokens=300)) as server:
            reply = await model(server).complete(USER)
            assert not has_price(model(server).config)
    assert (reply.usage.tokens_in, reply.usage.tokens_out, reply.usage.calls) == (1200, 300, 1)
    assert reply.usage.cost_usd is None and reply.usage.unpriced_calls == 1


@pytest.mark.anyio
async def test_cost_from_user_prices() -> None:
    with anyio.fail_after(10):
        async with serve(lambda body: FakeReply(content="7", prompt_tokens=1200, completion_tokens=300)) as server:
            llm = model(server, price_in_per_mtok=3.0, price_out_per_mtok=15.0)
            reply = await llm.complete(USER)
    assert has_price(llm.config)
    assert reply.usage.cost_usd == pytest.approx((1200 * 3.0 + 300 * 15.0) / 1e6)


@pytest.mark.anyio
async def test_concurrent_calls_are_not_serialised() -> None:
    """No reply leaves the server until 16 requests are in it at once: calls the client made one
    after the other would never get theirs (the time limit ends the test), however slow the machine."""
    calls, together = 64, 16
    replies: list = []
    gate = anyio.Event()

    async def answer(body: dict) -> FakeReply:
        if server.in_flight >= together:
            gate.set()
        await gate.wait()
        return FakeReply(content="7")

    with anyio.fail_after(60):
        async with serve(answer) as server:
            llm = model(server)

            async def call() -> None:
                replies.append(await llm.complete(USER))

            async with anyio.create_task_group() as group:
                for _ in range(calls):
                    group.start_soon(call)
    assert len(replies) == calls and len(server.requests) == calls
    assert server.max_in_flight >= together


def test_usage_sums_keep_unknown_costs_unknown() -> None:
    priced, unpriced = Usage.of_call(100, 10, 0.5), Usage.of_call(50, 5, None)
    assert (priced + priced).cost_usd == 1.0
    total = sum([priced, unpriced, priced], Usage())
    assert (total.tokens_in, total.tokens_out, total.calls) == (250, 25, 3)
    assert total.cost_usd is None and total.known_cost_usd == 1.0 and total.unpriced_calls == 1
    assert Usage().cost_usd == 0.0


def test_prices_come_in_pairs() -> None:
    with pytest.raises(BadInput, match="both"):
        ModelConfig("openai/x", price_in_per_mtok=1.0)


def test_backoff_grows_with_jitter_and_honours_retry_after_up_to_the_cap() -> None:
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (9, 30.0)]:
        delay = backoff_delay(attempt, 1.0, 30.0)
        assert ceiling / 2 <= delay <= ceiling
    assert backoff_delay(1, 1.0, 30.0, retry_after_s=7.0) == 7.0
    assert backoff_delay(1, 1.0, 30.0, retry_after_s=900.0) == 30.0


def test_credentials_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    hint = credentials_hint("anthropic/claude-opus-4")
    assert hint is not None and "ANTHROPIC_API_KEY" in hint
    assert credentials_hint("anthropic/claude-opus-4", api_key="sk-ant-x") is None
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert credentials_hint("openai/local-model", api_base="http://127.0.0.1:8000/v1") is None
    assert "OPENAI_API_KEY" in (credentials_hint("openai/gpt-4o") or "")
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:8000/v1")
    assert credentials_hint("openai/local-model") is None
    assert credentials_hint("ollama/llama3") is None
    assert "--model" in (credentials_hint("") or "")
    assert "provider/name" in (credentials_hint("no-such-model") or "")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert credentials_hint("anthropic/claude-opus-4") is None


@pytest.mark.anyio
async def test_local_server_without_any_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with anyio.fail_after(10):
        async with serve(lambda body: FakeReply(content="7")) as server:
            reply = await LiteLLMModel(ModelConfig("openai/fake-model", api_base=server.url)).complete(USER)
    assert reply.content == "7"


@pytest.mark.anyio
async def test_the_mergers_replies_come_whole_and_are_still_counted_retried_and_bounded(tmp_path) -> None:
    """The merger's client as the CLI builds it (`SolveConfig.models`): not streamed (its
    replies are whole files, and litellm's stream handling costs CPU per chunk in the workers'
    process), its usage and price counted, a failed attempt counted and retried, and, with no
    idle cut, a silent reply cut by its reply timeout and retried once."""
    from dataclasses import replace

    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.modelsettings import MERGER_REPLY_TIMEOUT_S, ModelSettings

    cfg = SolveConfig(problems=tmp_path, run=tmp_path / "run", model="openai/fake-model",
                      price_in_per_mtok=3.0, price_out_per_mtok=15.0)
    answer = FakeReply(content="# merged", prompt_tokens=1200, completion_tokens=300)
    with anyio.fail_after(20):
        async with serve(lambda body: answer, FaultPlan.first("server_error")) as server:
            config = ModelSettings.of(cfg, server.url).merger
            assert ModelSettings.of(cfg, server.url).worker.stream  # the workers' replies still stream
            reply = await LiteLLMModel(replace(config, backoff_base_s=0.01, backoff_cap_s=0.05)).complete(USER)
        async with serve(lambda body: answer, FaultPlan(rate=1.0, kinds=("timeout",))) as silent:
            hung = replace(ModelSettings.of(cfg, silent.url).merger, reply_timeout_s=0.5)
            with pytest.raises(ModelError) as caught:
                await LiteLLMModel(hung).complete(USER)
    assert not config.stream and config.reply_timeout_s == MERGER_REPLY_TIMEOUT_S
    assert [bool(r.get("stream")) for r in server.requests] == [False, False]
    assert reply.content == "# merged"
    usage = reply.usage
    assert (usage.calls, usage.failed_calls, usage.tokens_in, usage.tokens_out) == (2, 1, 1200, 300)
    assert usage.cost_usd == pytest.approx((1200 * 3.0 + 300 * 15.0) / 1e6)
    assert (caught.value.kind, caught.value.attempts, len(silent.requests)) == ("timeout", 2, 2)
    assert (caught.value.usage.calls, caught.value.usage.failed_calls) == (2, 2)
