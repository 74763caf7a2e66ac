"""What the fake server answers: scripted replies, errors, and their OpenAI JSON form."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from gitswarm.fakeserver.wire import error_body


@dataclass(frozen=True)
class FakeReply:
    """One assistant reply. Token counts default to a deterministic estimate (chars / 4)."""

    content: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    """Each `{"name": ..., "arguments": dict or raw string}`; a raw string is sent verbatim."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    """Default: "tool_calls" when there are tool calls, else "stop"; "length" means cut by max_tokens."""
    thinking: str | None = None
    """The reasoning text, shown where the personality shows it (an Anthropic `thinking` block
    when the request turns thinking on); None: a short default text."""
    reasoning_tokens: int | None = None
    """Hidden reasoning tokens of a reasoning model (counted in the output); None: an estimate."""


@dataclass(frozen=True)
class FakeError:
    """An HTTP error reply in OpenAI's error format (e.g. 401, or 400 context_length_exceeded)."""

    status: int
    message: str
    kind: str = "invalid_request_error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    param: str | None = None

    def body(self) -> dict:
        """The JSON body of the reply."""
        return error_body(self.message, self.kind, self.code, self.param)


Answer = FakeReply | FakeError | dict
"""A responder's answer; a dict is sent as the response JSON unchanged."""
Responder = Callable[[dict], Answer | Awaitable[Answer]]
"""Takes a chat-completion request body; may be sync or async."""


class ScriptExhausted(Exception):
    """A scripted responder was asked for more replies than it holds (answered with a 500)."""


class ScriptedResponder:
    """Replays `replies` in order, one per request that reaches it."""

    def __init__(self, replies: Iterable[Answer]) -> None:
        self.replies = list(replies)
        self.served = 0

    def __call__(self, request: dict) -> Answer:
        if self.served >= len(self.replies):
            raise ScriptExhausted(f"fake server script exhausted: all {len(self.replies)} replies served")
        self.served += 1
        return self.replies[self.served - 1]


def echo_responder(request: dict) -> FakeReply:
    """Answers with the text of the last message; handy for trying the server by hand."""
    messages = request.get("messages") or [{}]
    return FakeReply(content=f"echo: {messages[-1].get('content', '')}")


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: four characters a token, at least one."""
    return max(1, len(text) // 4)


def _tool_calls(reply: FakeReply, index: int) -> list[dict]:
    return [{"id": f"call_{index}_{n}", "type": "function",
             "function": {"name": call["name"], "arguments": call["arguments"]
                          if isinstance(call["arguments"], str) else json.dumps(call["arguments"])}}
            for n, call in enumerate(reply.tool_calls)]


def openai_usage(reply: FakeReply, request: dict) -> dict:
    """The usage an OpenAI-compatible server reports for this reply to this request."""
    return _usage(reply, request, _tool_calls(reply, 0))


def _usage(reply: FakeReply, request: dict, calls: list[dict]) -> dict:
    prompt = reply.prompt_tokens
    if prompt is None:
        prompt = estimate_tokens(json.dumps(request.get("messages", [])))
    completion = reply.completion_tokens
    if completion is None:
        completion = estimate_tokens(reply.content + "".join(c["function"]["arguments"] for c in calls))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _finish_reason(reply: FakeReply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _envelope(request: dict, index: int, obj: str) -> dict:
    return {"id": f"chatcmpl-fake-{index}", "object": obj, "created": int(time.time()),
            "model": request.get("model", "fake-model"), "system_fingerprint": "gitswarm-fake"}


def completion_json(reply: FakeReply, request: dict, index: int, usage: dict | None = None) -> dict:
    """The reply as an OpenAI `chat.completion` object (with `usage`, or the default estimate)."""
    calls = _tool_calls(reply, index)
    message: dict = {"role": "assistant", "content": reply.content or None}
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "finish_reason": _finish_reason(reply), "logprobs": None}
    return {**_envelope(request, index, "chat.completion"), "choices": [choice],
            "usage": usage or _usage(reply, request, calls)}


def stream_json(reply: FakeReply, request: dict, index: int, piece: int = 16,
                usage: dict | None = None) -> list[dict]:
    """The reply as OpenAI `chat.completion.chunk` objects (without the final `[DONE]`); the usage
    chunk only when the request asks for it with `stream_options.include_usage`."""
    base = _envelope(request, index, "chat.completion.chunk")
    calls = _tool_calls(reply, index)

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": reply.content[i:i + piece]}) for i in range(0, len(reply.content), piece)]
    chunks += [chunk({"tool_calls": [{"index": n, **call}]}) for n, call in enumerate(calls)]
    chunks.append(chunk({}, _finish_reason(reply)))
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": usage or _usage(reply, request, calls)})
    return chunks
