"""The model client: the one place that calls `litellm.acompletion`.

Every reply is streamed (cut when silent, bounded in all), every attempt is counted and its
tokens kept (litellm's and the OpenAI SDK's own retries are off), a timeout is retried at most
once, each retry is announced (`on_retry`), an output limit the provider states is adopted, and
a model without function calling is spoken to through the text protocol. Local servers are met
as they are: calls a model wrote as text are read (`leaked`), a server whose streams with tools
come back empty gets those requests unstreamed, a server whose streams carry no token counts
gets every request unstreamed, and a model that answers in prose twice in a row despite
`tools` is switched to the text protocol.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import anyio.lowlevel

from gitswarm.models import calls, capabilities, leaked, textproto
from gitswarm.models.config import DEFAULT_OUTPUT_TOKENS, ModelConfig
from gitswarm.models.errors import (
    EmptyReply,
    ModelError,
    Retry,
    backoff_delay,
    from_litellm,
    given_up,
    retry_of,
)
from gitswarm.models.lib import configured_base, litellm_module
from gitswarm.models.pricing import Pricer
from gitswarm.models.reply import (
    Reply,
    ToolCall,
    assistant_message,
    call_usage,
    replayable,
    tool_call,
    usage_parts,
    with_calls,
)
from gitswarm.models.request import check_thinking_room, completion_args, may_force_tools
from gitswarm.models.stream import StreamEmpty, StreamIdle, collect, counted_by_server, joined
from gitswarm.usage import Usage

__all__ = ["LiteLLMModel", "Reply", "ToolCall"]

TEXT_PROTOCOL = "gitswarm_text_protocol"
"""Marks an assistant message whose content holds its calls in the text protocol already."""
PROSE_BEFORE_TEXT = 2
"""Replies in a row without any tool call, despite `tools`, after which `auto` turns to the text protocol."""


@dataclass
class _Spending:
    """What one call has spent so far, and whether an attempt of it is out at the server."""

    spent: Usage = field(default_factory=Usage)
    sending: bool = False

    def so_far(self) -> Usage:
        """The attempts done, and one cut off mid-reply: sent, maybe billed, its tokens unknown."""
        return self.spent + Usage(calls=1, failed_calls=1) if self.sending else self.spent


class LiteLLMModel:
    """A model reached through litellm: streaming, timeouts, retries, tokens and cost."""

    def __init__(self, config: ModelConfig, turns: anyio.CapacityLimiter | None = None) -> None:
        self.config = config
        self.turns = turns or (anyio.CapacityLimiter(config.max_concurrent_calls)
                               if config.max_concurrent_calls else None)
        """Turns at the server (`max_concurrent_calls`), which another client of the same server
        (the merger's) may share; None: every call goes at once."""
        self.pricer = Pricer(config)
        known = capabilities.known_output_limit(config.model) if config.model else None
        wanted = config.max_output_tokens or DEFAULT_OUTPUT_TOKENS
        self.output_limit = min(wanted, known) if known else wanted
        """Tokens asked for per reply: the setting, clamped to the model's known limit, lowered
        to the limit a provider states in a refusal."""
        check_thinking_room(config, self.output_limit)
        self._native = capabilities.has_native_tools(config.model) if config.model else None
        self.protocol = self._initial_protocol()
        """`native` or `text`: how tools are offered to this model (auto picks; a refusal of
        `tools`, or replies in prose despite them, switch to text)."""
        self.stream_tools = True
        """Requests carrying `tools` are streamed (when replies are); False once a streamed one
        came back empty, as llama-cpp-python's server answers them."""
        self.stream_counts = True
        """Streamed replies carry the provider's token counts; False once one ended whole without
        them (llama-cpp-python's server ignores `stream_options`): from then on every request is
        sent unstreamed, whose reply carries the server's own count."""
        self.forces_tools = True
        """False once a self-hosted server failed a request that forced a tool call (llama-cpp-python
        answers tool_choice "required" with a 500): no request forces one from then on."""
        self._prose_in_row = 0

    def _initial_protocol(self) -> str:
        if self.config.tool_protocol != "auto":
            return self.config.tool_protocol
        return "text" if self._native is False else "native"

    def may_force_tools(self) -> bool:
        """A request may force a tool call (`tool_choice`): native tools, no reasoning mode."""
        return self.protocol == "native" and self.forces_tools and may_force_tools(self.config)

    async def complete(self, messages: list[dict], tools: list[dict] | None = None, *,
                       tool_choice: str | None = None, on_retry: Callable[[Retry], None] | None = None,
                       on_cut: Callable[[Usage], None] | None = None) -> Reply:
        """One reply. Transient failures are retried (a timeout once), each announced to
        `on_retry` before its wait; the reply's usage and a ModelError's `usage` count every
        attempt, failed ones included. A call cancelled (a stop, an episode's wall clock) hands
        `on_cut` what it spent before the cancellation goes on: its attempts so far, and the
        one cut off mid-reply as a failed call whose tokens no one counted."""
        spending = _Spending()
        try:
            return await self._complete(messages, tools, tool_choice, on_retry, spending)
        except anyio.get_cancelled_exc_class():
            if on_cut is not None:
                on_cut(spending.so_far())
            raise

    async def _complete(self, messages: list[dict], tools: list[dict] | None, tool_choice: str | None,
                        on_retry: Callable[[Retry], None] | None, spending: _Spending) -> Reply:
        attempt, retries, timeouts, adapted = 0, 0, 0, set()
        streak: list[str] = []  # the kinds of the failed attempts, for "N times in a row"
        while True:
            attempt += 1
            sent_with = (self.output_limit, self.protocol, self.streams(bool(tools)))  # concurrent calls change them
            try:
                async with self.turns or contextlib.nullcontext():  # the reply timeout starts in turn
                    await anyio.lowlevel.checkpoint_if_cancelled()  # no request leaves a cancelled call
                    spending.sending = True
                    reply = await self._attempt(messages, tools, tool_choice, attempt)
            except ModelError as error:
                spending.sending, spending.spent = False, spending.spent + error.usage
                change = self._adapt(error, tools, *sent_with)
                if change is None and tool_choice == "required" and error.kind == "server" and self.config.api_base:
                    self.forces_tools, tool_choice, change = False, None, "unforced"
                if change is not None and change not in adapted:
                    adapted.add(change)  # each change once, and not a retry: the request was not the same
                    continue
                retries += 1
                timeouts += error.kind == "timeout"
                streak = [*streak, error.kind] if streak[-1:] == [error.kind] else [error.kind]
                if (not error.retryable or retries > self.config.max_retries
                        or timeouts > self.config.timeout_retries):
                    error.usage = spending.spent
                    if error.retryable:
                        raise given_up(error, len(streak)) from error
                    raise
                delay = backoff_delay(retries, self.config.backoff_base_s, self.config.backoff_cap_s,
                                      error.retry_after_s)
                if on_retry is not None:
                    on_retry(retry_of(error, attempt, delay))
                await anyio.sleep(delay)
                continue
            spending.sending = False
            self._learn(reply, tools, sent_with[1])
            return replace(reply, usage=spending.spent + reply.usage)

    def streams(self, with_tools: bool) -> bool:
        """A request (with tools, or without) is streamed, by the settings and what this client learnt."""
        native = with_tools and self.protocol == "native"
        return self.config.stream and self.stream_counts and (self.stream_tools or not native)

    def _adapt(self, error: ModelError, tools: list[dict] | None, limit: int, protocol: str,
               streamed: bool) -> str | None:
        """Learn from a failure of a request sent with `limit`, `protocol` and `streamed`: the
        output limit a refusal names, that the model takes no tools, or that the server's
        streams with tools come back empty. Returns what changed (a retry may then succeed), or
        None."""
        auto = self.config.tool_protocol == "auto"
        streamed_tools = auto and bool(tools) and protocol == "native" and streamed
        if isinstance(error, EmptyReply) or (error.kind == "server" and capabilities.refuses_streamed_tools(
                error.message)):
            # A self-hosted server may not stream tool calls: llama-cpp-python answers a streamed
            # request with tools by an empty stream, or by a 500 when the model picks a tool.
            if streamed_tools:
                self.stream_tools = False
                return "unstreamed tools"
            return None
        if error.kind != "bad_request":
            return None
        stated = capabilities.stated_output_limit(error.message)
        if stated is not None and stated < limit:
            self.output_limit = min(self.output_limit, stated)
            return "output limit"
        if auto and tools and protocol == "native" and capabilities.refuses_tools(error.message):
            self.protocol = "text"
            return "tool protocol"
        return None

    def _learn(self, reply: Reply, tools: list[dict] | None, protocol: str) -> None:
        """Count the replies in a row that made no tool call although `tools` were accepted;
        with `auto`, the model is then spoken to through the text protocol. Not a model litellm
        knows to call tools (a hosted one): there, prose is the model's choice, and the engine
        nudges it."""
        if (not tools or protocol != "native" or self.config.tool_protocol != "auto" or reply.truncated
                or self._native):
            return
        self._prose_in_row = 0 if reply.tool_calls else self._prose_in_row + 1
        if self._prose_in_row >= PROSE_BEFORE_TEXT:
            self.protocol = "text"

    async def _attempt(self, messages: list[dict], tools: list[dict] | None, tool_choice: str | None,
                       attempt: int) -> Reply:
        text = bool(tools) and self.protocol == "text"
        sent = textproto.to_text_messages(_for_text(messages), tools) if text and tools else messages
        if self.config.api_base and not text:
            sent = [_with_content(m) for m in sent]
        streamed = self.streams(bool(tools))
        config = self.config if streamed == self.config.stream else replace(self.config, stream=False)
        args = completion_args(config, sent, None if text else tools, output_limit=self.output_limit,
                               tool_choice=tool_choice, api_key=self.config.api_key or self._fallback_key)
        with calls.attempt(args, tools, "text" if text else "native") as call:  # the episode's record
            return await self._exchange(args, sent, streamed, text, tools, attempt, call)

    async def _exchange(self, args: dict, sent: list[dict], streamed: bool, text: bool, tools: list[dict] | None,
                        attempt: int, call: calls.Attempt) -> Reply:
        import openai  # loaded by litellm already

        litellm = litellm_module()
        chunks: list = []
        stream = None
        with anyio.move_on_after(self.config.reply_timeout_s) as scope:  # unstreamed, the only bound
            try:
                response = await litellm.acompletion(**args)
                if streamed:
                    stream = response
                    await collect(stream, self.config.idle_timeout_s, chunks)
                    response = joined(chunks, sent)
            except openai.OpenAIError as exc:  # litellm's exceptions all derive from it
                error = from_litellm(exc, litellm, attempt)
                if error.kind == "timeout" and not isinstance(args["timeout"], int | float):
                    error = ModelError("timeout", f"no bytes for {self.config.idle_timeout_s:.0f} s "
                                       f"(idle timeout): {error.message}", attempts=attempt)
                raise self._failed(error, chunks, sent, stream) from exc
            except StreamIdle as exc:
                raise self._failed(ModelError("timeout", str(exc), attempts=attempt), chunks, sent, stream) from None
            except StreamEmpty as exc:
                raise self._failed(EmptyReply(str(exc), attempts=attempt), chunks, sent, stream) from None
        if scope.cancelled_caught:
            error = ModelError("timeout", f"no complete reply in {self.config.reply_timeout_s:.0f} s "
                               "(reply timeout)", attempts=attempt)
            raise self._failed(error, chunks, sent, stream)
        counted = stream is None or counted_by_server(stream)
        try:
            reply = self._reply(response, attempt, tools, text, estimated=not counted)
        except ModelError as error:
            raise self._failed(error, [], sent) from None
        if not counted:  # a whole reply streamed without the server's count: whole replies from now on
            self.stream_counts = False
        call.replied(response, reply)
        return reply

    def _failed(self, error: ModelError, chunks: list, sent: list[dict], stream: Any = None) -> ModelError:
        """The error, carrying what its attempt used: the call, and the tokens a cut stream
        reported before it broke, or litellm's count of them when it reported none (a refused
        request bills nothing)."""
        parts = {"tokens_in": 0, "tokens_out": 0}  # refused or lost before any reply: not billed
        cost: float | None = 0.0
        if chunks:
            response = joined(chunks, sent)
            parts = usage_parts(response)
            if parts["tokens_in"] or parts["tokens_out"]:
                cost = self.pricer.cost(response, parts)
        estimated = bool(chunks) and stream is not None and not counted_by_server(stream)
        error.usage = call_usage(parts, cost, failed=True, estimated=estimated)
        return error

    @functools.cached_property
    def _fallback_key(self) -> str | None:
        # A local server at api_base ignores the key, but the OpenAI SDK refuses to run without one.
        model, base = self.config.model, self.config.api_base
        if configured_base(model, base) and litellm_module().validate_environment(model)["missing_keys"]:
            return "sk-no-key-needed"
        return None

    def _reply(self, response: Any, attempt: int, tools: list[dict] | None, text: bool, estimated: bool) -> Reply:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelError("malformed", "the reply has no choices", attempts=attempt)
        message, finish = choices[0].message, choices[0].finish_reason or ""
        content = message.content or ""
        parts = usage_parts(response)
        cost = self.pricer.cost(response, parts)
        usage = call_usage(parts, cost, estimated=estimated)
        if not content and not message.tool_calls and not usage.tokens_out:
            # Nothing generated at all: the transport lost the reply. (An empty reply that did
            # generate tokens, such as Gemini's malformed function call, goes to the engine.)
            raise EmptyReply("the reply is empty", attempts=attempt)
        if text and tools:
            prose, calls = textproto.parse_reply(content, tools)
            if not calls:
                calls, prose = leaked.find(content, tools, textproto.text_call_id)
            kept = {"role": "assistant", "content": content, TEXT_PROTOCOL: True}
            return Reply(prose, calls, usage, finish, kept)
        calls = [tool_call(call, n) for n, call in enumerate(message.tool_calls or [])]
        kept = assistant_message(message)
        found, prose = leaked.find(content, tools, _native_id) if content and tools and not calls else ([], "")
        if found:
            calls, content, kept = found, prose, with_calls(kept, prose, found)
        return Reply(content, calls, usage, finish, replayable(kept, calls, truncated=finish == "length"))


def _native_id(n: int) -> str:
    # Nine letters and digits: the one form every provider's check of tool-call ids accepts
    # (vLLM's and Mistral's demand exactly that).
    return uuid.uuid4().hex[:9]


def _for_text(messages: list[dict]) -> list[dict]:
    """The history for the text protocol: a turn that was written in it keeps its own text."""
    return [{k: v for k, v in m.items() if k != TEXT_PROTOCOL} if m.get(TEXT_PROTOCOL) else m
            for m in messages]


def _with_content(message: dict) -> dict:
    """An assistant turn of tool calls with `content` "" rather than null, which litellm leaves
    out: a self-hosted server's chat template may read every message's content (llama-cpp-python's
    chatml-function-calling fails the request without it)."""
    if message.get("role") == "assistant" and message.get("content") is None:
        return {**message, "content": ""}
    return message
