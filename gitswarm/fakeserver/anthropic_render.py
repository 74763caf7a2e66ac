"""A FakeReply as an Anthropic Messages API reply: a `message` object, or its stream of events."""

from __future__ import annotations

import json

from gitswarm.fakeserver import wire
from gitswarm.fakeserver.anthropic_rules import thinking_on
from gitswarm.fakeserver.billing import Usage
from gitswarm.fakeserver.responders import FakeReply, estimate_tokens
from gitswarm.fakeserver.thinking import Signer, thinking_text

PIECE = 16
"""Characters per text, thinking or input_json delta."""
_STOP = {"length": "max_tokens", "tool_calls": "tool_use", "stop": "end_turn"}


def thinking_of(reply: FakeReply, body: dict) -> str | None:
    """The reply's thinking text when the request turns thinking on, else None."""
    return thinking_text(reply.thinking, len(body.get("messages") or [])) if thinking_on(body) else None


def output_tokens(reply: FakeReply, body: dict) -> int:
    """Output tokens: the responder's count, or the estimate of thinking, text and tool input."""
    if reply.completion_tokens is not None:
        return reply.completion_tokens
    raw = "".join(_raw(call["arguments"]) for call in reply.tool_calls)
    return estimate_tokens((thinking_of(reply, body) or "") + reply.content + raw)


def reported_usage(usage: Usage) -> dict:
    """The `usage` object of a reply: input_tokens excludes what was read from or written to the cache."""
    written = usage.cache_write_5m_tokens + usage.cache_write_1h_tokens
    return {"input_tokens": usage.input_tokens, "cache_creation_input_tokens": written,
            "cache_read_input_tokens": usage.cache_read_tokens, "output_tokens": usage.output_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write_5m_tokens,
                               "ephemeral_1h_input_tokens": usage.cache_write_1h_tokens},
            "service_tier": "standard"}


def stop_reason(reply: FakeReply) -> str:
    """max_tokens for a cut reply, tool_use when it calls tools, else end_turn."""
    if reply.finish_reason in _STOP:
        return _STOP[reply.finish_reason]
    return "tool_use" if reply.tool_calls else "end_turn"


def message(reply: FakeReply, body: dict, index: int, usage: dict, signer: Signer) -> dict:
    """The reply as a complete `message` object."""
    return {**_envelope(body, index, usage), "content": content(reply, body, index, signer),
            "stop_reason": stop_reason(reply)}


def content(reply: FakeReply, body: dict, index: int, signer: Signer) -> list[dict]:
    """The content blocks: thinking (when on, signed), text, then one tool_use per call."""
    blocks: list[dict] = []
    thinking = thinking_of(reply, body)
    if thinking is not None:
        blocks.append({"type": "thinking", "thinking": thinking, "signature": signer.sign(thinking)})
    if reply.content:
        blocks.append({"type": "text", "text": reply.content})
    cut = reply.finish_reason == "length"
    for n, call in enumerate(reply.tool_calls):
        blocks.append({"type": "tool_use", "id": tool_use_id(index, n), "name": call["name"],
                       "input": _input(call["arguments"], cut)})
    return blocks


def tool_use_id(index: int, n: int) -> str:
    """The id of the n-th tool_use block of the reply to request `index` (unique per server)."""
    return f"toolu_fake_{index:06d}_{n}"


def events(reply: FakeReply, body: dict, index: int, usage: dict, signer: Signer) -> list[bytes]:
    """The reply as the documented event stream: message_start, ping, each block's start, deltas
    and stop, message_delta (stop_reason, output usage), message_stop."""
    start = {**_envelope(body, index, {**usage, "output_tokens": 1}), "content": [], "stop_reason": None}
    out = [event("message_start", {"message": start}), event("ping", {})]
    raws = iter([_raw(call["arguments"]) for call in reply.tool_calls])
    for i, block in enumerate(content(reply, body, index, signer)):
        out += _block_events(i, block, next(raws) if block["type"] == "tool_use" else "")
    delta = {"delta": {"stop_reason": stop_reason(reply), "stop_sequence": None},
             "usage": {"output_tokens": usage["output_tokens"]}}
    return [*out, event("message_delta", delta), event("message_stop", {})]


def _block_events(i: int, block: dict, raw: str) -> list[bytes]:
    kind = block["type"]
    opening: dict[str, object]
    if kind == "thinking":
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
    else:
        opening = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(raw)]]
    return [event("content_block_start", {"index": i, "content_block": opening}),
            *(event("content_block_delta", {"index": i, "delta": d}) for d in deltas),
            event("content_block_stop", {"index": i})]


def event(name: str, data: dict) -> bytes:
    """One named server-sent event whose data carries the same `type`."""
    return wire.sse(json.dumps({"type": name, **data}), name)


def _envelope(body: dict, index: int, usage: dict) -> dict:
    return {"id": f"msg_fake{index:06d}", "type": "message", "role": "assistant",
            "model": body.get("model", "claude-fake"), "stop_sequence": None, "usage": usage}


def _pieces(text: str) -> list[str]:
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)]


def _raw(arguments: object) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _input(arguments: object, cut: bool) -> object:
    """A tool_use block's input: the arguments object; a cut one parsed as far as it goes; a
    malformed one left as the raw string (the client cannot read it as an object)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return partial_object(arguments) if cut else arguments


def partial_object(raw: str, attempts: int = 64) -> dict:
    """The object a JSON text cut short begins, as far as it can be closed and parsed."""
    for end in range(len(raw), max(0, len(raw) - attempts), -1):
        try:
            value = json.loads(_closed(raw[:end]))
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else {}
    return {}


def _closed(text: str) -> str:
    """`text` with its open string and brackets closed."""
    stack, in_string, escaped = [], False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}" and stack:
            stack.pop()
    return text + ('"' if in_string else "") + "".join(reversed(stack))
