"""A model's reply as the engine uses it, read from litellm's response: the tool calls (parsed
leniently), the parts of usage, and the assistant message kept verbatim for the next turn."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gitswarm.models.arguments import ArgumentsError, parse_arguments
from gitswarm.usage import Usage

_DROPPED = frozenset({"function_call", "audio", "annotations", "images"})
"""Fields of litellm's message that never go back to a provider."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; `error` is set when its arguments cannot be used, and says why."""

    id: str
    name: str
    arguments: dict | None
    raw_arguments: str
    error: str | None = None
    leaked: str | None = None
    """The format of a call the model wrote into its text instead of making it ("json",
    "tool_call_tag", "function_tag", "mistral", "fence"; see `leaked`); None for a real call."""


@dataclass(frozen=True)
class Reply:
    """A model's reply; `message` is the assistant message to append to the conversation."""

    content: str
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str
    """stop, tool_calls, length (cut at the output limit), content_filter, ..."""
    message: dict = field(repr=False)
    """The assistant turn as the provider must see it again: thinking blocks and their
    signatures, reasoning content and provider fields included."""

    @property
    def truncated(self) -> bool:
        """The reply was cut off at the output limit: its last tool call may be partial."""
        return self.finish_reason == "length"


def tool_call(call: Any, n: int) -> ToolCall:
    """A native tool call; its arguments parsed leniently, an unusable one carrying the reason."""
    raw = call.function.arguments or ""
    name, call_id = call.function.name or "", call.id or f"call_{n}"
    try:
        return ToolCall(call_id, name, parse_arguments(raw), raw)
    except ArgumentsError as exc:
        return ToolCall(call_id, name, None, raw, str(exc))


def assistant_message(message: Any) -> dict:
    """litellm's message as a dict to send back unchanged: every field it returned but the
    ones no provider takes back, and no empty ones."""
    dumped = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    kept = {k: v for k, v in dumped.items() if k not in _DROPPED and v not in (None, [], {})}
    kept["role"] = "assistant"
    if "tool_calls" in kept:
        kept["tool_calls"] = [{"id": c["id"], "type": "function",
                               "function": {"name": c["function"]["name"],
                                            "arguments": c["function"].get("arguments") or ""}}
                              for c in kept["tool_calls"]]
        kept.setdefault("content", None)
    else:
        kept.setdefault("content", "")
    return kept


def with_calls(message: dict, content: str, calls: list[ToolCall]) -> dict:
    """The assistant turn with calls it wrote as text made native: the text without them, and
    each as a `tool_calls` entry, so the tool results that follow are legal for the provider."""
    entries = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
               for c in calls]
    return {**message, "content": content or None, "tool_calls": entries}


def replayable(message: dict, calls: list[ToolCall], truncated: bool) -> dict:
    """The assistant turn as a provider takes it back: a call cut off at the output limit is
    left out (no provider takes half an argument object back, and none of it was run; the
    text says so), and a call whose arguments are broken goes back with an empty object
    (Anthropic's `tool_use.input` must be one; its tool result says what was wrong); arguments
    read leniently go back as strict JSON, which litellm re-parses for Anthropic."""
    if not calls or "tool_calls" not in message:
        return message
    if truncated:
        kept = {k: v for k, v in message.items() if k != "tool_calls"}
        cut = ", ".join(c.name for c in calls)
        kept["content"] = "\n\n".join(p for p in (message.get("content") or "",
                                                   f"[cut off at the output limit in a call to {cut}]") if p)
        return kept
    sent_back = {c.id: _strict_arguments(c) for c in calls}
    fixed = [{**c, "function": {**c["function"], "arguments": sent_back.get(c["id"], c["function"]["arguments"])}}
             for c in message["tool_calls"]]
    return {**message, "tool_calls": fixed}


def _strict_arguments(call: ToolCall) -> str:
    """The arguments as strict JSON: as the model wrote them when they are, re-encoded when
    they were read leniently (a raw newline in a string), `{}` when they could not be used."""
    if call.error or call.arguments is None:
        return "{}"
    try:
        json.loads(call.raw_arguments or "{}")
    except json.JSONDecodeError:
        return json.dumps(call.arguments, ensure_ascii=False)
    return call.raw_arguments or "{}"


def usage_parts(response: Any) -> dict[str, int]:
    """Input, output, cache-read, cache-write and reasoning tokens of a response, from the
    fields litellm fills for each provider (Anthropic's cache fields, OpenAI's details)."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return {"tokens_in": 0, "tokens_out": 0}
    prompt_details = _get(usage, "prompt_tokens_details")
    completion_details = _get(usage, "completion_tokens_details")
    return {"tokens_in": _int(_get(usage, "prompt_tokens")),
            "tokens_out": _int(_get(usage, "completion_tokens")),
            "cache_read": _int(_get(usage, "cache_read_input_tokens") or _get(prompt_details, "cached_tokens")),
            "cache_write": _int(_get(usage, "cache_creation_input_tokens")),
            "reasoning": _int(_get(completion_details, "reasoning_tokens"))}


def call_usage(parts: dict[str, int], cost: float | None, *, failed: bool = False, estimated: bool = False) -> Usage:
    """The usage of one call, from its `usage_parts` and its cost (None: no price known)."""
    return Usage.of_call(parts["tokens_in"], parts["tokens_out"], cost, cache_read=parts.get("cache_read", 0),
                         cache_write=parts.get("cache_write", 0), reasoning=parts.get("reasoning", 0),
                         failed=failed, estimated=estimated)


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0
