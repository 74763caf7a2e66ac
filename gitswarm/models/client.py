"""The model client: the one place that calls `litellm.acompletion`.

Every reply is streamed (cut when silent, bounded in all), every attempt is counted and its
tokens kept (litellm's and the OpenAI SDK's own retries are off), a timeout is retried at most
once, an output limit the provider states is adopted, and a model without function calling is
spoken to through the text protocol.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import anyio

from gitswarm.models import capabilities, textproto
from gitswarm.models.config import DEFAULT_OUTPUT_TOKENS, ModelConfig
from gitswarm.models.errors import ModelError, backoff_delay, from_litellm
from gitswarm.models.lib import configured_base, litellm_module
from gitswarm.models.pricing import Pricer
from gitswarm.models.reply import Reply, ToolCall, assistant_message, replayable, tool_call, usage_parts
from gitswarm.models.request import check_thinking_room, completion_args, may_force_tools
from gitswarm.models.stream import StreamEmpty, StreamIdle, collect, joined
from gitswarm.usage import Usage

__all__ = ["LiteLLMModel", "Reply", "ToolCall"]

TEXT_PROTOCOL = "gitswarm_text_protocol"
"""Marks an assistant message whose content holds its calls in the text protocol already."""


class LiteLLMModel:
    """A model reached through litellm: streaming, timeouts, retries, tokens and cost."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.pricer = Pricer(config)
        known = capabilities.known_output_limit(config.model) if config.model else None
        wanted = config.max_output_tokens or DEFAULT_OUTPUT_TOKENS
        self.output_limit = min(wanted, known) if known else wanted
        """Tokens asked for per reply: the setting, clamped to the model's known limit, lowered
        to the limit a provider states in a refusal."""
        check_thinking_room(config, self.output_limit)
        self.protocol = self._initial_protocol()
        """`native` or `text`: how tools are offered to this model (auto picks, a refusal switches)."""

    def _initial_protocol(self) -> str:
        if self.config.tool_protocol != "auto":
            return self.config.tool_protocol
        native = capabilities.has_native_tools(self.config.model) if self.config.model else None
        return "text" if native is False else "native"

    def may_force_tools(self) -> bool:
        """A request may force a tool call (`tool_choice`): native tools, no reasoning mode."""
        return self.protocol == "native" and may_force_tools(self.config)

    async def complete(self, messages: list[dict], tools: list[dict] | None = None, *,
                       tool_choice: str | None = None) -> Reply:
        """One reply. Transient failures are retried (a timeout once); the reply's usage and a
        ModelError's `usage` count every attempt, failed ones included."""
        spent, attempt, retries, timeouts, adapted = Usage(), 0, 0, 0, set()
        while True:
            attempt += 1
            sent_with = (self.output_limit, self.protocol)  # concurrent calls may change them meanwhile
            try:
                reply = await self._attempt(messages, tools, tool_choice, attempt)
                return replace(reply, usage=spent + reply.usage)
            except ModelError as error:
                spent += error.usage
                change = self._adapt(error, tools, *sent_with)
                if change is not None and change not in adapted:
                    adapted.add(change)  # each change once, and not a retry: the request was not the same
                    continue
                retries += 1
                timeouts += error.kind == "timeout"
                if (not error.retryable or retries > self.config.max_retries
                        or timeouts > self.config.timeout_retries):
                    error.usage = spent
                    raise
                await anyio.sleep(backoff_delay(retries, self.config.backoff_base_s,
                                                self.config.backoff_cap_s, error.retry_after_s))

    def _adapt(self, error: ModelError, tools: list[dict] | None, limit: int, protocol: str) -> str | None:
        """Learn from a refusal of a request sent with `limit` and `protocol` that states what
        the model takes: the output limit it names, or that it takes no tools. Returns what
        changed (a retry may then succeed), or None."""
        if error.kind != "bad_request":
            return None
        stated = capabilities.stated_output_limit(error.message)
        if stated is not None and stated < limit:
            self.output_limit = min(self.output_limit, stated)
            return "output limit"
        if (tools and protocol == "native" and self.config.tool_protocol == "auto"
                and capabilities.refuses_tools(error.message)):
            self.protocol = "text"
            return "tool protocol"
        return None

    async def _attempt(self, messages: list[dict], tools: list[dict] | None, tool_choice: str | None,
                       attempt: int) -> Reply:
        import openai  # loaded by litellm already

        litellm = litellm_module()
        text = bool(tools) and self.protocol == "text"
        sent = textproto.to_text_messages(_for_text(messages), tools) if text else messages
        args = completion_args(self.config, sent, None if text else tools, output_limit=self.output_limit,
                               tool_choice=tool_choice, api_key=self.config.api_key or self._fallback_key)
        chunks: list = []
        with anyio.move_on_after(self.config.reply_timeout_s) as scope:
            try:
                response = await litellm.acompletion(**args)
                if self.config.stream:
                    await collect(response, self.config.idle_timeout_s, chunks)
                    response = joined(chunks, sent)
            except openai.OpenAIError as exc:  # litellm's exceptions all derive from it
                error = from_litellm(exc, litellm, attempt)
                if error.kind == "timeout" and not isinstance(args["timeout"], int | float):
                    error = ModelError("timeout", f"no bytes for {self.config.idle_timeout_s:.0f} s "
                                       f"(idle timeout): {error.message}", attempts=attempt)
                raise self._failed(error, chunks, sent) from exc
            except StreamIdle as exc:
                raise self._failed(ModelError("timeout", str(exc), attempts=attempt), chunks, sent) from None
            except StreamEmpty as exc:
                raise self._failed(ModelError("malformed", str(exc), attempts=attempt), chunks, sent) from None
        if scope.cancelled_caught:
            error = ModelError("timeout", f"no complete reply in {self.config.reply_timeout_s:.0f} s "
                               "(reply timeout)", attempts=attempt)
            raise self._failed(error, chunks, sent)
        try:
            return self._reply(response, attempt, tools if text else None)
        except ModelError as error:
            raise self._failed(error, [], sent) from None

    def _failed(self, error: ModelError, chunks: list, sent: list[dict]) -> ModelError:
        """The error, carrying what its attempt used: the call, and the tokens a cut stream
        reported before it broke (a refused request bills nothing)."""
        parts, cost = {"tokens_in": 0, "tokens_out": 0}, 0.0  # refused or lost before any reply: not billed
        if chunks:
            response = joined(chunks, sent)
            parts = usage_parts(response)
            if parts["tokens_in"] or parts["tokens_out"]:
                cost = self.pricer.cost(response, parts)
        error.usage = Usage.of_call(parts.pop("tokens_in"), parts.pop("tokens_out"), cost, failed=True, **parts)
        return error

    @functools.cached_property
    def _fallback_key(self) -> str | None:
        # A local server at api_base ignores the key, but the OpenAI SDK refuses to run without one.
        model, base = self.config.model, self.config.api_base
        if configured_base(model, base) and litellm_module().validate_environment(model)["missing_keys"]:
            return "sk-no-key-needed"
        return None

    def _reply(self, response: Any, attempt: int, text_tools: list[dict] | None) -> Reply:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelError("malformed", "the reply has no choices", attempts=attempt)
        message, finish = choices[0].message, choices[0].finish_reason or ""
        content = message.content or ""
        parts = usage_parts(response)
        cost = self.pricer.cost(response, parts)
        usage = Usage.of_call(parts.pop("tokens_in"), parts.pop("tokens_out"), cost, **parts)
        if not content and not message.tool_calls and not usage.tokens_out:
            # Nothing generated at all: the transport lost the reply. (An empty reply that did
            # generate tokens, such as Gemini's malformed function call, goes to the engine.)
            raise ModelError("malformed", "the reply is empty", attempts=attempt)
        if text_tools is not None:
            prose, calls = textproto.parse_reply(content, text_tools)
            kept = {"role": "assistant", "content": content, TEXT_PROTOCOL: True}
            return Reply(prose, calls, usage, finish, kept)
        calls = [tool_call(call, n) for n, call in enumerate(message.tool_calls or [])]
        kept = replayable(assistant_message(message), calls, truncated=finish == "length")
        return Reply(content, calls, usage, finish, kept)


def _for_text(messages: list[dict]) -> list[dict]:
    """The history for the text protocol: a turn that was written in it keeps its own text."""
    return [{k: v for k, v in m.items() if k != TEXT_PROTOCOL} if m.get(TEXT_PROTOCOL) else m
            for m in messages]
