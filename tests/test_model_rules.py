"""The model client against the rules real providers keep, through real litellm and the fake
server: the output limit always sent and adopted from a refusal, the text protocol after a
refusal of `tools`, every attempt counted, usage asked for in streams, prices with a cache."""

from __future__ import annotations

import anyio
import pytest

from gitswarm.errors import BadInput
from gitswarm.fakeserver import FakeError, FakeReply, FaultPlan, ScriptedResponder, serve
from gitswarm.models import textproto
from gitswarm.models.capabilities import refuses_tools, stated_output_limit
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import DEFAULT_OUTPUT_TOKENS, ModelConfig
from gitswarm.models.credentials import has_price
from gitswarm.models.errors import ModelError
from gitswarm.models.pricing import Pricer

USER = [{"role": "user", "content": "Read notes/a.md."}]
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the memory.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
OPENAI_LIMIT = ("max_tokens is too large: 16000. This model supports at most 8192 completion tokens, "
                "whereas you provided 16000.")
ANTHROPIC_LIMIT = ("max_tokens: 128000 > 32000, which is the maximum allowed number of output tokens for "
                   "claude-opus-4-20250514")
OLLAMA_NO_TOOLS = "registry.ollama.ai/library/llama3:latest does not support tools"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def litellm_imported() -> None:
    has_price(ModelConfig("openai/fake-model"))


def model(server, name: str = "openai/fake-model", **options) -> LiteLLMModel:
    settings = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, **options}
    return LiteLLMModel(ModelConfig(name, api_base=server.url, api_key="sk-fake", **settings))


def test_stated_limits_and_tool_refusals_are_read_from_the_providers_wording() -> None:
    assert stated_output_limit(OPENAI_LIMIT) == 8192
    assert stated_output_limit(ANTHROPIC_LIMIT) == 32000
    assert stated_output_limit("context_length_exceeded: too many tokens in the prompt") is None
    assert refuses_tools(OLLAMA_NO_TOOLS)
    assert refuses_tools('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
    assert not refuses_tools("Invalid value for 'temperature'")


@pytest.mark.anyio
async def test_the_output_limit_is_always_sent_and_clamped_to_the_known_limit() -> None:
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="1"), FakeReply(content="2")])) as server:
            await model(server).complete(USER)
            await model(server, "openai/gpt-3.5-turbo").complete(USER)  # litellm knows it: 4096 out
    assert [r["max_tokens"] for r in server.requests] == [DEFAULT_OUTPUT_TOKENS, 4096]


@pytest.mark.anyio
async def test_a_limit_the_provider_states_is_adopted_and_kept() -> None:
    script = ScriptedResponder([FakeError(400, OPENAI_LIMIT), FakeReply(content="1"), FakeReply(content="2")])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server)
            first = await llm.complete(USER)
            await llm.complete(USER)
    assert [r["max_tokens"] for r in server.requests] == [DEFAULT_OUTPUT_TOKENS, 8192, 8192]
    assert llm.output_limit == 8192
    assert (first.usage.calls, first.usage.failed_calls) == (2, 1)


@pytest.mark.anyio
async def test_a_refusal_of_tools_switches_to_the_text_protocol() -> None:
    text_call = FakeReply(content=textproto.format_calls([("read_file", {"path": "notes/a.md"})]))
    script = ScriptedResponder([FakeError(400, OLLAMA_NO_TOOLS), text_call, text_call])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server, "openai/llama3")
            reply = await llm.complete(USER, TOOLS)
            result = {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "the note"}
            await llm.complete([*USER, reply.message, result], TOOLS)
    assert llm.protocol == "text"
    assert [c.arguments for c in reply.tool_calls] == [{"path": "notes/a.md"}]
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]
    resent = server.requests[2]["messages"]
    assert {m["role"] for m in resent} == {"system", "user", "assistant"}
    assert "# How to call tools" in resent[0]["content"]
    assert '<result call="1" tool="read_file">' in resent[-1]["content"]


@pytest.mark.anyio
async def test_native_protocol_is_not_switched_when_asked_for() -> None:
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeError(400, OLLAMA_NO_TOOLS)])) as server:
            with pytest.raises(ModelError) as caught:
                await model(server, tool_protocol="native").complete(USER, TOOLS)
    assert caught.value.kind == "bad_request" and len(server.requests) == 1
    assert caught.value.usage.calls == 1


@pytest.mark.anyio
async def test_streams_ask_for_usage_and_every_attempt_is_counted() -> None:
    script = ScriptedResponder([FakeReply(content="7", prompt_tokens=120, completion_tokens=5)])
    with anyio.fail_after(10):
        async with serve(script, FaultPlan.first("rate_limit", "server_error", retry_after_s=0.01)) as server:
            reply = await model(server).complete(USER)
    assert server.requests[-1]["stream"] is True
    assert server.requests[-1]["stream_options"] == {"include_usage": True}
    assert (reply.usage.tokens_in, reply.usage.tokens_out) == (120, 5)
    assert (reply.usage.calls, reply.usage.failed_calls) == (3, 2)


@pytest.mark.anyio
async def test_temperature_is_never_sent_with_a_reasoning_mode() -> None:
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="1"), FakeReply(content="2")])) as server:
            await model(server, temperature=0.3).complete(USER)
            await model(server, temperature=0.3, reasoning_effort="high").complete(USER)
    assert server.requests[0]["temperature"] == 0.3
    assert "temperature" not in server.requests[1] and server.requests[1]["reasoning_effort"] == "high"


def test_user_prices_bill_cache_reads_and_writes_at_their_own_price() -> None:
    config = ModelConfig("openai/x", price_in_per_mtok=3.0, price_out_per_mtok=15.0,
                         price_cached_in_per_mtok=0.3, price_cache_write_per_mtok=3.75)
    parts = {"tokens_in": 1_000_000, "cache_read": 600_000, "cache_write": 100_000, "tokens_out": 10_000}
    expected = (300_000 * 3.0 + 600_000 * 0.3 + 100_000 * 3.75 + 10_000 * 15.0) / 1e6
    assert Pricer(config).user_cost(parts) == pytest.approx(expected)
    plain = ModelConfig("openai/x", price_in_per_mtok=3.0, price_out_per_mtok=15.0)
    assert Pricer(plain).user_cost(parts) == pytest.approx((1_000_000 * 3.0 + 10_000 * 15.0) / 1e6)


def test_a_model_litellm_prices_at_zero_is_priced_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A local model's replies cost nothing known: litellm is asked once, not at every call. A
    priced model's empty reply (0 USD) says nothing of its next one, which is priced again."""
    import litellm

    asked: list[str] = []
    real = litellm.completion_cost
    monkeypatch.setattr(litellm, "completion_cost", lambda **kw: asked.append(kw["model"]) or real(**kw))

    def reply(model: str, tokens_in: int, tokens_out: int) -> litellm.ModelResponse:
        return litellm.ModelResponse(model=model, usage=litellm.Usage(
            prompt_tokens=tokens_in, completion_tokens=tokens_out, total_tokens=tokens_in + tokens_out))

    parts = {"tokens_in": 1200, "tokens_out": 80}
    local = Pricer(ModelConfig("ollama/llama3"))  # in litellm's map, at 0 USD a token
    assert [local.cost(reply("llama3", 1200, 80), parts) for _ in range(3)] == [None] * 3
    assert asked == ["ollama/llama3"]
    priced = Pricer(ModelConfig("gpt-4o-mini"))
    assert priced.cost(reply("gpt-4o-mini", 0, 0), {"tokens_in": 0, "tokens_out": 0}) is None
    assert priced.cost(reply("gpt-4o-mini", 1200, 80), parts) > 0
    assert asked[1:] == ["gpt-4o-mini", "gpt-4o-mini"]


@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "name"), [("openai", "openai/fake-model"),
                                                   ("anthropic", "anthropic/claude-sonnet-4-5")])
async def test_a_reply_far_longer_than_the_idle_timeout_completes_while_it_streams(personality, name) -> None:
    """A reasoning model's 20-minute reply, scaled down: 3 s of trickled events against a 0.5 s
    idle timeout; it is never cut, since bytes keep arriving."""
    plan = FaultPlan.first("slow_stream", slow_stream_s=3.0, trickle_s=0.1)
    reply_text = "A long and careful proof. " * 40
    with anyio.fail_after(20):
        async with serve(ScriptedResponder([FakeReply(content=reply_text)]), plan, personality=personality) as server:
            started = anyio.current_time()
            reply = await model(server, name, idle_timeout_s=0.5, reply_timeout_s=15).complete(USER)
            took = anyio.current_time() - started
    assert reply.content == reply_text and took >= 2.5
    assert len(server.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize(("personality", "name"), [("openai", "openai/fake-model"),
                                                   ("anthropic", "anthropic/claude-sonnet-4-5")])
async def test_a_silent_connection_is_cut_at_the_idle_timeout_and_retried_once(personality, name) -> None:
    plan = FaultPlan(rate=1.0, kinds=("stall",))
    with anyio.fail_after(20):
        async with serve(ScriptedResponder([]), plan, personality=personality) as server:
            started = anyio.current_time()
            with pytest.raises(ModelError) as caught:
                await model(server, name, idle_timeout_s=0.5, reply_timeout_s=15).complete(USER)
            took = anyio.current_time() - started
    assert caught.value.kind == "timeout" and "idle timeout" in caught.value.message
    assert len(server.requests) == 2 and took < 10
    assert (caught.value.usage.calls, caught.value.usage.failed_calls) == (2, 2)


def test_default_timeouts_fit_a_model_that_thinks_for_fifteen_minutes() -> None:
    from gitswarm.engine.config import SolveConfig

    config = ModelConfig("anthropic/claude-opus-4-5")
    assert config.reply_timeout_s >= 20 * 60 and config.timeout_retries == 1
    cfg = SolveConfig(problems=".", run=".", model="m")
    assert cfg.reply_timeout_s >= 20 * 60
    assert cfg.episode_timeout_s >= 8 * 15 * 60  # several 15-minute replies in one episode


def test_a_thinking_budget_that_cannot_fit_the_output_limit_is_refused_before_any_call() -> None:
    with pytest.raises(BadInput, match="raise --max-output-tokens above 4096"):
        LiteLLMModel(ModelConfig("anthropic/claude-sonnet-4-5", reasoning_effort="high", max_output_tokens=3000))
    assert LiteLLMModel(ModelConfig("anthropic/claude-sonnet-4-5", reasoning_effort="high")).output_limit > 4096


@pytest.mark.anyio
async def test_learning_from_a_refusal_is_not_a_retry() -> None:
    """With no retries at all, the client still adapts once per kind of refusal."""
    script = ScriptedResponder([FakeError(400, OLLAMA_NO_TOOLS), FakeError(400, OPENAI_LIMIT),
                                FakeReply(content=textproto.format_calls([("read_file", {"path": "a"})]))])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server, "openai/llama3", max_retries=0)
            reply = await llm.complete(USER, TOOLS)
    assert (llm.protocol, llm.output_limit, len(server.requests)) == ("text", 8192, 3)
    assert (reply.usage.calls, reply.usage.failed_calls) == (3, 2)
