"""The model client against local servers as they are, through real litellm and the fake server:
tool calls a small model wrote into its text (in each format seen), a model that never calls
natively, a server whose streams with tools come back empty, and streams the server cuts."""

from __future__ import annotations

import json

import anyio
import pytest

from gitswarm.fakeserver import FakeReply, FakeServer, FaultPlan, ScriptedResponder, serve
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.models.credentials import has_price
from gitswarm.models.errors import ModelError, Retry, from_litellm
from gitswarm.models.lib import litellm_module

USER = [{"role": "user", "content": "Work on the problem."}]
TOOLS = [{"type": "function", "function": {
    "name": "contribute", "description": "Commit a contribution.",
    "parameters": {"type": "object", "properties": {"kind": {"type": "string"}, "body": {"type": "string"}},
                   "required": ["kind"]}}},
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file of the memory.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
CALL = {"name": "contribute", "arguments": {"kind": "attempt", "body": "x = 2"}}
LEAKED = {
    "json": f"I will submit it now.\n{json.dumps(CALL)}",
    "json_parameters": f"I will submit it now.\n{json.dumps({'name': 'contribute', 'parameters': CALL['arguments']})}",
    "tool_call_tag": f"I will submit it now.\n<tool_call>\n{json.dumps(CALL)}\n</tool_call>",
    "function_tag": 'I will submit it now.\n<function=contribute>{"kind": "attempt", "body": "x = 2"}</function>',
    "mistral": f"I will submit it now.\n[TOOL_CALLS][{json.dumps(CALL)}]",
    "fence": f"I will submit it now.\n```json\n{json.dumps(CALL)}\n```",
}


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


def completion(content: str | None = None, calls: list[dict] | None = None) -> dict:
    """An OpenAI chat.completion body, as a server that does not stream answers any request."""
    message: dict = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                 for n, c in enumerate(calls)]
    return {"id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}}


@pytest.mark.anyio
@pytest.mark.parametrize("written", LEAKED)
async def test_a_call_leaked_into_the_text_is_made_natively(written: str) -> None:
    script = ScriptedResponder([FakeReply(content=LEAKED[written]), FakeReply(content="Done.")])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server)
            reply = await llm.complete(USER, TOOLS)
            result = {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "committed"}
            await llm.complete([*USER, reply.message, result], TOOLS)
    [call] = reply.tool_calls
    assert (call.name, call.arguments, call.error) == ("contribute", CALL["arguments"], None)
    assert call.leaked == written.removesuffix("_parameters")
    assert reply.content == "I will submit it now."
    # The turn goes back as a native call, so the tool result after it is legal.
    kept = server.requests[1]["messages"][1]
    assert kept["content"] == "I will submit it now."
    assert kept["tool_calls"] == [{"id": call.id, "type": "function",
                                   "function": {"name": "contribute", "arguments": call.raw_arguments}}]
    assert server.requests[1]["messages"][2]["tool_call_id"] == call.id
    assert llm.protocol == "native"


@pytest.mark.anyio
@pytest.mark.parametrize("written", LEAKED)
async def test_a_call_leaked_into_the_text_protocol_is_read_and_its_result_labelled(written: str) -> None:
    script = ScriptedResponder([FakeReply(content=LEAKED[written]), FakeReply(content="Done.")])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server, tool_protocol="text")
            reply = await llm.complete(USER, TOOLS)
            result = {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "committed"}
            await llm.complete([*USER, reply.message, result], TOOLS)
    [call] = reply.tool_calls
    assert (call.name, call.arguments, call.error) == ("contribute", CALL["arguments"], None)
    assert call.leaked == written.removesuffix("_parameters") and call.id == "text_call_1"
    assert reply.content == "I will submit it now."
    assert "tools" not in server.requests[0]
    sent = server.requests[1]["messages"]
    assert sent[2]["content"] == LEAKED[written]  # the text as the model wrote it
    assert sent[3] == {"role": "user", "content": '<result call="1" tool="contribute">\ncommitted\n</result>'}


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["native", "text"])
async def test_json_naming_no_known_tool_is_prose(protocol: str) -> None:
    text = 'The API answers {"name": "search_web", "arguments": {"q": "primes"}}, and {"name": "x"} is a dict.'
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content=text)])) as server:
            reply = await model(server, tool_protocol=protocol).complete(USER, TOOLS)
    assert (reply.tool_calls, reply.content) == ([], text)
    assert "tool_calls" not in reply.message


@pytest.mark.anyio
async def test_several_leaked_calls_in_order_with_broken_arguments_reported() -> None:
    text = ('<tool_call>{"name": "read_file", "arguments": {"path": "a.md"}}</tool_call>\n'
            '<tool_call>{"name": "contribute", "arguments": {"kind": "attempt", "body": "\\frac{1}{2}"}}</tool_call>')
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content=text)])) as server:
            reply = await model(server).complete(USER, TOOLS)
    read, contribute = reply.tool_calls
    assert (read.name, read.arguments, read.error) == ("read_file", {"path": "a.md"}, None)
    assert contribute.arguments is None and "\\frac" in (contribute.error or "")  # a JSON escape ate the TeX
    assert read.id != contribute.id
    assert [c["function"]["arguments"] for c in reply.message["tool_calls"]] == ['{"path": "a.md"}', "{}"]
    assert reply.content == ""


@pytest.mark.anyio
async def test_a_leaked_call_cut_at_the_output_limit_is_not_kept_as_a_call() -> None:
    cut = FakeReply(content=f"Submitting.\n{json.dumps(CALL)}", finish_reason="length")
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([cut])) as server:
            reply = await model(server).complete(USER, TOOLS)
    assert reply.truncated and "tool_calls" not in reply.message
    assert "cut off at the output limit" in reply.message["content"]


@pytest.mark.anyio
async def test_two_replies_in_prose_despite_tools_switch_to_the_text_protocol() -> None:
    prose = FakeReply(content="Let me think about the problem first.")
    called = FakeReply(tool_calls=[CALL])
    in_text = FakeReply(content='<call name="read_file">\n<path>a.md</path>\n</call>')
    script = ScriptedResponder([prose, called, prose, prose, in_text, prose])
    with anyio.fail_after(10):
        async with serve(script) as server:
            llm = model(server)
            for _ in range(3):  # prose, a call (the count starts again), prose
                await llm.complete(USER, TOOLS)
            assert llm.protocol == "native"
            await llm.complete(USER, TOOLS)  # the second in a row
            assert llm.protocol == "text"
            reply = await llm.complete(USER, TOOLS)
            await llm.complete(USER)  # without tools: nothing to count
    assert [bool(r.get("tools")) for r in server.requests] == [True] * 4 + [False, False]
    assert '<call name="' in server.requests[4]["messages"][0]["content"]  # the protocol's instructions
    assert (reply.tool_calls[0].name, reply.tool_calls[0].arguments) == ("read_file", {"path": "a.md"})


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "protocol"), [("openai/fake-model", "native"), ("openai/gpt-4o", "auto")])
async def test_replies_in_prose_keep_an_explicit_native_protocol_or_a_model_known_to_call_tools(
        name: str, protocol: str) -> None:
    prose = FakeReply(content="Let me think.")
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([prose] * 3)) as server:
            llm = LiteLLMModel(ModelConfig(name, api_base=server.url, api_key="sk-fake", tool_protocol=protocol))
            for _ in range(3):
                await llm.complete(USER, TOOLS)
    assert llm.protocol == "native" and all(r.get("tools") for r in server.requests)


@pytest.mark.anyio
async def test_an_empty_stream_with_tools_is_asked_again_unstreamed_and_tools_stay_unstreamed() -> None:
    """llama-cpp-python's server answers a streamed request carrying `tools` with nothing usable;
    here the server answers every request with a whole JSON body, which a stream reads as empty."""
    read = completion(calls=[{"name": "read_file", "arguments": {"path": "a.md"}}])
    retries: list[Retry] = []
    with anyio.fail_after(10):
        async with serve(lambda body: read if body.get("tools") or not body.get("stream") else
                         FakeReply(content="7")) as server:
            llm = model(server)
            assert llm.stream_tools
            reply = await llm.complete(USER, TOOLS, on_retry=retries.append)
            again = await llm.complete(USER, TOOLS)
            plain = await llm.complete(USER)
    assert [bool(r.get("stream")) for r in server.requests] == [True, False, False, True]
    assert not llm.stream_tools and llm.protocol == "native"
    assert reply.tool_calls[0].arguments == again.tool_calls[0].arguments == {"path": "a.md"}
    assert plain.content == "7"
    assert retries == []  # an adaptation, not a retry
    assert (reply.usage.calls, reply.usage.failed_calls) == (2, 1)


@pytest.mark.anyio
async def test_llama_cpp_gets_tool_choice_auto_and_its_500_on_a_streamed_call_turns_tools_unstreamed() -> None:
    """llama-cpp-python's chatml-function-calling offers the tools only with tool_choice "auto",
    and then fails a streamed reply in which the model picks a tool with a 500."""
    call = FakeReply(tool_calls=[{"name": "read_file", "arguments": {"path": "a.md"}}])
    retries: list[Retry] = []
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([call, call, call]), personality="llama-cpp") as server:
            llm = model(server)
            reply = await llm.complete(USER, TOOLS, on_retry=retries.append)
            again = await llm.complete(USER, TOOLS)
    assert [r.get("tool_choice") for r in server.requests] == ["auto"] * 3
    assert [bool(r.get("stream")) for r in server.requests] == [True, False, False]
    assert reply.tool_calls[0].arguments == again.tool_calls[0].arguments == {"path": "a.md"}
    assert not llm.stream_tools and retries == []  # an adaptation, not a retry


@pytest.mark.anyio
async def test_a_tool_turn_goes_to_llama_cpp_with_content_its_template_reads() -> None:
    """litellm leaves out an assistant turn's null content, and llama-cpp-python's template reads
    every message's content: without it, every step after a tool call was a 500."""
    turn = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.md"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "# a"}]
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="Done.")] * 2), personality="llama-cpp") as server:
            reply = await model(server, max_retries=0).complete(turn, TOOLS)
    assert reply.content == "Done." and server.requests[0]["messages"][1]["content"] == ""


@pytest.mark.anyio
async def test_an_empty_stream_without_tools_is_retried_as_malformed() -> None:
    with anyio.fail_after(10):
        async with serve(lambda body: completion("7")) as server:
            llm = model(server, max_retries=1)
            with pytest.raises(ModelError) as caught:
                await llm.complete(USER)
    assert (caught.value.kind, caught.value.attempts) == ("malformed", 2)
    assert llm.stream_tools and all(r.get("stream") for r in server.requests)


@pytest.mark.anyio
async def test_cut_streams_are_retried_and_each_retry_is_announced() -> None:
    retries: list[Retry] = []
    plan = FaultPlan.first("truncated_stream", "unavailable", "truncated_stream")
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="7")]), plan) as server:
            reply = await model(server).complete(USER, on_retry=retries.append)
    assert reply.content == "7" and len(server.requests) == 4
    assert [(r.kind, r.what, r.attempt) for r in retries] == [
        ("stream_cut", "the server ended the reply early", 1),
        ("server", "the server failed (HTTP 503)", 2),
        ("stream_cut", "the server ended the reply early", 3)]
    for n, retry in enumerate(retries, 1):  # base 0.01 s, doubling, half of it jittered
        assert 0.01 * 2 ** (n - 1) / 2 <= retry.delay_s <= 0.01 * 2 ** (n - 1)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False])
async def test_streams_cut_every_time_end_in_an_error_that_names_the_fix(stream: bool) -> None:
    retries: list[Retry] = []
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([]), FaultPlan(rate=1.0, kinds=("truncated_stream",))) as server:
            with pytest.raises(ModelError) as caught:
                await model(server, stream=stream, max_retries=4).complete(USER, on_retry=retries.append)
    error = caught.value
    assert (error.kind, error.retryable, error.attempts, len(server.requests)) == ("stream_cut", True, 5, 5)
    assert [r.attempt for r in retries] == [1, 2, 3, 4] and {r.kind for r in retries} == {"stream_cut"}
    assert error.message.startswith(
        "the server ended the reply early 5 times in a row: a local server that interrupts concurrent requests "
        "does this (start llama-cpp-python's server with --interrupt_requests False, give llama-server "
        "--parallel N, or run with --workers 1). Details: litellm.")
    assert (error.usage.calls, error.usage.failed_calls) == (5, 5)


def test_litellms_stream_that_ended_before_a_finish_reason_is_a_cut_stream() -> None:
    """What llama-cpp-python's server does to a reply when another request arrives: litellm
    wraps its "Stream ended before a finish_reason was received" as the issue showed it, the
    connection error as the fallback's original exception, not as its cause."""
    litellm = litellm_module()
    ended = litellm.exceptions.APIConnectionError(
        "APIConnectionError: OpenAIException - Stream ended before a finish_reason was received",
        llm_provider="openai", model="fake-model")
    fallback = litellm.exceptions.MidStreamFallbackError(
        message=str(ended), model="fake-model", llm_provider="openai", original_exception=ended)
    error = from_litellm(fallback, litellm, 1)
    assert (error.kind, error.retryable) == ("stream_cut", True)
    other = litellm.exceptions.ServiceUnavailableError("overloaded", llm_provider="openai", model="fake-model")
    assert from_litellm(other, litellm, 1).kind == "server"


@pytest.mark.parametrize(("text", "found", "prose"), [
    ('<think>I could send {"name": "read_file", "arguments": {"path": "x"}}</think>\nI will read.',
     [], '<think>I could send {"name": "read_file", "arguments": {"path": "x"}}</think>\nI will read.'),
    ('<think>cut while thinking {"name": "read_file", "arguments": {"path": "x"}}', [], None),
    ('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}', [("read_file", {"path": "a"})], ""),
    ('<function=read_file>{"path": "a"}<function=contribute>{"kind": "note",}',
     [("read_file", {"path": "a"}), ("contribute", {"kind": "note"})], ""),
    ('[TOOL_CALLS]read_file[ARGS]{"path": "a"}', [("read_file", {"path": "a"})], ""),
    ('Calling [{"type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": \\"a\\"}"}}] now',
     [("read_file", {"path": "a"})], "Calling  now"),
    ('For $\\frac{1}{2}$ and {x : x > 0}, {"name": "read_file", "path": "a"} has no arguments key.', [], None),
])
def test_leaked_formats_read_directly(text: str, found: list, prose: str | None) -> None:
    from gitswarm.models.leaked import find

    calls, left = find(text, TOOLS, lambda n: f"id{n}")
    assert [(c.name, c.arguments) for c in calls] == found
    assert all(c.error is None for c in calls)
    assert left == (text.strip() if prose is None else prose)


def test_a_tagged_call_that_is_not_json_comes_back_with_what_went_wrong() -> None:
    from gitswarm.models.leaked import find

    [call], left = find('<tool_call>{"name": "contribute", "arguments": {"kind": "attempt"</tool_call>', TOOLS, str)
    assert (call.name, call.arguments, call.leaked, left) == ("contribute", None, "tool_call_tag", "")
    assert "not valid JSON" in (call.error or "")


@pytest.mark.anyio
async def test_a_500_to_a_forced_tool_call_stops_forcing_on_a_self_hosted_server() -> None:
    """llama-cpp-python's chatml-function-calling fails tool_choice "required" with a 500: the
    nudge's forced call is asked again unforced, and no later request forces one."""
    call = FakeReply(tool_calls=[{"name": "read_file", "arguments": {"path": "a.md"}}])
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([call, call]), personality="llama-cpp") as server:
            llm = model(server, stream=False)
            reply = await llm.complete(USER, TOOLS, tool_choice="required")
    assert [r.get("tool_choice") for r in server.requests] == ["required", "auto"]
    assert reply.tool_calls[0].name == "read_file" and not llm.may_force_tools()
    assert (reply.usage.calls, reply.usage.failed_calls) == (2, 1)


@pytest.mark.anyio
async def test_a_stream_without_the_servers_count_is_marked_and_later_requests_go_whole() -> None:
    """llama-cpp-python's streams carry no usage (it ignores `stream_options`), and litellm then
    counts the tokens itself. That count is marked as litellm's, and the client asks for whole
    replies from then on, whose usage is the server's own."""
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="The answer is 7.")] * 3),
                         personality="llama-cpp") as server:
            llm = model(server)
            first = await llm.complete(USER)
            later = [await llm.complete(USER, TOOLS), await llm.complete(USER)]
    assert [bool(r.get("stream")) for r in server.requests] == [True, False, False]
    assert first.usage.estimated_tokens == first.usage.tokens > 0 and not llm.stream_counts
    for reply, charge in zip(later, server.charges[1:], strict=True):
        assert (reply.usage.tokens_in, reply.usage.tokens_out, reply.usage.estimated_tokens) == \
            (charge.usage.prompt_tokens, charge.usage.output_tokens, 0)


@pytest.mark.anyio
async def test_a_stream_with_the_servers_count_keeps_streaming_and_a_cut_one_is_marked() -> None:
    """A server that sends usage in its streams when asked keeps getting streamed requests; the
    tokens of a stream cut before its usage chunk are litellm's count, and marked so."""
    plan = FaultPlan.first("truncated_stream")
    with anyio.fail_after(10):
        async with serve(ScriptedResponder([FakeReply(content="The answer is 7.")] * 3), plan) as server:
            llm = model(server)
            first = await llm.complete(USER)
            second = await llm.complete(USER)
    assert all(r.get("stream") for r in server.requests) and llm.stream_counts
    assert first.usage.calls == 2 and 0 < first.usage.estimated_tokens < first.usage.tokens
    charge = server.charges[-1]
    assert (second.usage.tokens_in, second.usage.tokens_out, second.usage.estimated_tokens) == \
        (charge.usage.prompt_tokens, charge.usage.output_tokens, 0)


@pytest.mark.anyio
@pytest.mark.parametrize("bound", [None, 1])
async def test_a_wait_in_a_one_slot_servers_queue_does_not_count_against_the_reply_timeout(bound) -> None:
    """llama-cpp-python answers one request at a time: three at once, each a second's reply,
    and the third waits two seconds in its queue. Under a reply timeout of 1.5 s that wait
    times it out, unless the client sends one at a time (`max_concurrent_calls`), starting
    each call's timeout when its turn comes."""
    reply = FakeReply(content="The answer is 7, as the sum shows.")
    async with serve(ScriptedResponder([reply] * 6), personality="llama-cpp", interrupt_requests=False,
                     tokens_per_s=10) as server:
        llm = model(server, stream=False, reply_timeout_s=1.6, timeout_retries=0, max_concurrent_calls=bound)
        outcomes: list = []

        async def one() -> None:
            try:
                outcomes.append(await llm.complete(USER))
            except ModelError as error:
                outcomes.append(error)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(one)
    timed_out = [o for o in outcomes if isinstance(o, ModelError)]
    if bound is None:
        assert timed_out and all(o.kind == "timeout" for o in timed_out)
    else:
        assert not timed_out and server.max_in_flight == 1
