"""The model client: the one place that calls `litellm.acompletion`.

Calls get a timeout, our own retries (litellm's and the OpenAI SDK's are switched off so
every attempt is counted here), tokens and cost.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import anyio

from gitswarm.models.config import ModelConfig
from gitswarm.models.errors import ModelError, backoff_delay, from_litellm
from gitswarm.models.lib import configured_base, litellm_module
from gitswarm.usage import Usage


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; `error` is set when the arguments are not a JSON object."""

    id: str
    name: str
    arguments: dict | None
    raw_arguments: str
    error: str | None = None


@dataclass(frozen=True)
class Reply:
    """A model's reply; `message` is the assistant message to append to the conversation."""

    content: str
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str
    message: dict = field(repr=False)


class LiteLLMModel:
    """A model reached through `litellm.acompletion`, with timeouts, retries, tokens and cost."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._unpriced: set[str] = set()  # models litellm failed to price: each failure scans its map

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Reply:
        """One completion; transient failures are retried, the rest raise ModelError at once."""
        for attempt in range(1, self.config.max_retries + 2):
            try:
                return await self._attempt(messages, tools, attempt)
            except ModelError as error:
                if not error.retryable or attempt > self.config.max_retries:
                    raise
                await anyio.sleep(backoff_delay(attempt, self.config.backoff_base_s,
                                                self.config.backoff_cap_s, error.retry_after_s))
        raise AssertionError("unreachable")

    async def _attempt(self, messages: list[dict], tools: list[dict] | None, attempt: int) -> Reply:
        import openai  # loaded by litellm already

        litellm = litellm_module()
        # litellm's own timeout is per read on some transports; this bounds the whole attempt.
        with anyio.move_on_after(self.config.reply_timeout_s * 1.5 + 5) as scope:
            try:
                response = await litellm.acompletion(**self._request(messages, tools))
            except openai.OpenAIError as exc:  # litellm's exceptions all derive from it
                raise from_litellm(exc, litellm, attempt) from exc
        if scope.cancelled_caught:
            raise ModelError("timeout", "no complete reply in time", attempts=attempt)
        return self._reply(response, attempt)

    def _request(self, messages: list[dict], tools: list[dict] | None) -> dict[str, Any]:
        c = self.config
        optional = {"tools": tools or None, "api_base": c.api_base, "temperature": c.temperature,
                    "api_key": c.api_key or self._fallback_key, "max_tokens": c.max_output_tokens}
        return {"model": c.model, "messages": messages, "timeout": c.reply_timeout_s, "num_retries": 0,
                **{k: v for k, v in optional.items() if v is not None}}

    @functools.cached_property
    def _fallback_key(self) -> str | None:
        # A local server at api_base ignores the key, but the OpenAI SDK refuses to run without one.
        model, base = self.config.model, self.config.api_base
        if configured_base(model, base) and litellm_module().validate_environment(model)["missing_keys"]:
            return "sk-no-key-needed"
        return None

    def _reply(self, response: Any, attempt: int) -> Reply:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelError("malformed", "the reply has no choices", attempts=attempt)
        message, finish = choices[0].message, choices[0].finish_reason or ""
        content = message.content or ""
        calls = [_tool_call(call, n) for n, call in enumerate(message.tool_calls or [])]
        if not content and not calls and finish == "stop":
            raise ModelError("malformed", "the reply is empty", attempts=attempt)
        tokens_in = getattr(response.usage, "prompt_tokens", 0) or 0
        tokens_out = getattr(response.usage, "completion_tokens", 0) or 0
        usage = Usage.of_call(tokens_in, tokens_out, self._cost(response, tokens_in, tokens_out))
        return Reply(content, calls, usage, finish, _assistant_message(content, calls))

    def _cost(self, response: Any, tokens_in: int, tokens_out: int) -> float | None:
        c = self.config
        if c.user_priced:
            return (tokens_in * c.price_in_per_mtok + tokens_out * c.price_out_per_mtok) / 1e6
        stamped = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if stamped:  # litellm prices every reply it returns; pricing it again cost ~0.5 ms a call
            return float(stamped)
        served_by = str(getattr(response, "model", ""))
        if served_by in self._unpriced:
            return None
        try:
            cost = litellm_module().completion_cost(completion_response=response)
        except Exception:  # litellm raises assorted types for a model it cannot price: cost unknown
            self._unpriced.add(served_by)
            return None
        return cost if cost > 0 else None  # litellm's fallback rules price unmapped models at 0


def _tool_call(call: Any, n: int) -> ToolCall:
    raw = call.function.arguments or ""
    name, call_id = call.function.name or "", call.id or f"call_{n}"
    if not raw.strip():
        return ToolCall(call_id, name, {}, raw)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, name, None, raw, f"arguments are not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        return ToolCall(call_id, name, None, raw, f"arguments are a JSON {kind}, not an object")
    return ToolCall(call_id, name, arguments, raw)


def _assistant_message(content: str, calls: list[ToolCall]) -> dict:
    if not calls:
        return {"role": "assistant", "content": content}
    return {"role": "assistant", "content": content or None,
            "tool_calls": [{"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.raw_arguments}} for c in calls]}
