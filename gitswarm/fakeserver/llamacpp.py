"""`llama-cpp`: llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) as
its code behaves (llama_cpp/server/app.py, llama_chat_format.py), not as the OpenAI API does.

One reply at a time: requests wait for a lock, and with `interrupt_requests` (its default) a
stream in progress, seeing another request wait, sends `[DONE]` after its current chunk and
stops: no finish_reason, the reply cut. An unstreamed reply is never interrupted.

Tools, as the `chatml-function-calling` chat format handles them:
- no `tool_choice` (or "none"): the tools are not even put in the prompt; the model, which
  never saw them, answers in text (a call in the responder's reply is dropped);
- "auto": unstreamed, the model picks a tool or a message by grammar, and the calls come
  back as `tool_calls`; streamed, a message streams as text but a tool call is a 500,
  "Automatic streaming tool choice is not supported";
- a named function: that call, forced by grammar, streamed or not;
- "required": a 500 with an empty message (the handler's `assert` on "auto").
The legacy `functionary` format offers the tools whenever they are given and makes one call
(a `tool_choice` string other than "auto" becomes the call's name; a reply the responder wrote
without a call stays text), unstreamed only: a streamed request with tools is a 500 with an
empty message (`assert stream is False`, after the generation).

Its chatml-function-calling template reads every message's `content` (a turn without one is a
500) and has no place for `tool` messages: a tool's result never reaches the model.

Streams never carry usage (`stream_options` is ignored); unstreamed replies do. An error, a
wrong key included, is answered as a 500 `internal_server_error` by the route handler. A local
model is free.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace

import anyio

from gitswarm.fakeserver import catalog, wire
from gitswarm.fakeserver.billing import Usage
from gitswarm.fakeserver.personality import Personality, Settings
from gitswarm.fakeserver.responders import FakeError, FakeReply
from gitswarm.fakeserver.streaming import Pace

CHAT_FORMATS = ("chatml-function-calling", "functionary")
"""The chat formats whose tool handling is played."""
STREAMED_AUTO = "Automatic streaming tool choice is not supported"
"""chatml-function-calling's ValueError for a streamed tool call it chose by itself."""


def _server_error(message: str) -> FakeError:
    """How the route handler answers any exception: a 500 with the exception's text."""
    return FakeError(500, message, "internal_server_error")


class LlamaCppPersonality(Personality):
    """llama-cpp-python's server: one reply at a time, interrupted streams, its tool handling."""

    name = "llama-cpp"
    table: dict[str, catalog.ModelSpec] = {}  # noqa: RUF012 - local models are free and unknown

    def __init__(self, settings: Settings) -> None:
        if settings.chat_format not in CHAT_FORMATS:
            raise ValueError(f"unknown chat format {settings.chat_format!r}; known: {', '.join(CHAT_FORMATS)}")
        super().__init__(settings)
        self.lock = anyio.Lock()
        self.waiting = 0
        """Requests waiting for the lock (the server's outer lock is held while any does)."""

    def authenticate(self, headers: Mapping[str, str]) -> FakeError | None:
        """With --api_key, a bearer token; the HTTPException(401) comes back as a 500."""
        expected = self.settings.api_key
        if expected is None or headers.get("authorization", "") == f"Bearer {expected}":
            return None
        return _server_error("401: Invalid API key")

    def validate(self, body: dict) -> FakeError | None:
        """What its chat format cannot take fails before generation: a message without
        `content` (its Jinja template reads `message.content` under StrictUndefined, and litellm
        leaves out an assistant turn's null content), and some tool_choice values."""
        choice, tools = body.get("tool_choice"), body.get("tools") or []
        if self.settings.chat_format != "chatml-function-calling":
            return None
        if any("content" not in m for m in body.get("messages") or []):
            return _server_error("'dict object' has no attribute 'content'")
        if not tools:
            return None
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            if name not in _names(tools):
                return _server_error(f"Tool with name '{name}' not found in tools")
        elif choice not in (None, "none", "auto"):
            return _server_error("")  # `assert tool_choice == "auto"` carries no message
        return None

    def neutral(self, body: dict) -> dict:
        """The request as the model sees it: without tools where the chat format leaves them out."""
        if _offered(body, self.settings.chat_format):
            return body
        return {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}

    def handle(self, reply: FakeReply, body: dict) -> FakeReply | FakeError:
        """The model's reply as the chat format's handler returns it, or the error it raises."""
        if not _offered(body, self.settings.chat_format):
            return replace(reply, tool_calls=[], finish_reason=_text_finish(reply))
        if self.settings.chat_format == "functionary":
            return _functionary(reply, body)
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            return replace(reply, content="", tool_calls=[_forced(reply, choice["function"]["name"])],
                           finish_reason="tool_calls")
        if reply.tool_calls and body.get("stream"):
            return _server_error(STREAMED_AUTO)
        return replace(reply, content="") if reply.tool_calls else reply

    def render(self, reply: FakeReply, body: dict, index: int, usage: dict) -> dict:
        """The chat.completion: `tool_calls` (and `function_call` for one) with content None."""
        ids = _Ids(reply, body, self.settings.chat_format)
        message: dict = {"role": "assistant", "content": None if reply.tool_calls else reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": c["name"],
                                                                            "arguments": _raw(c)}}
                                     for i, c in zip(ids.calls, reply.tool_calls, strict=True)]
            if len(reply.tool_calls) == 1:
                message["function_call"] = message["tool_calls"][0]["function"]
        finish = "tool_calls" if reply.tool_calls else _text_finish(reply) or "stop"
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        return {**ids.envelope("chat.completion"), "choices": [choice], "usage": usage}

    def events(self, reply: FakeReply, body: dict, index: int, usage: dict) -> list[bytes]:
        """One chunk per token, no usage chunk, then [DONE]."""
        ids = _Ids(reply, body, self.settings.chat_format)
        chunks = _call_chunks(reply, ids) if reply.tool_calls else _text_chunks(reply, ids)
        return [*(wire.sse(json.dumps(c)) for c in chunks), wire.sse("[DONE]")]

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """The model's lock: one request generates while the others wait."""
        self.waiting += 1
        try:
            await self.lock.acquire()
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self.lock.release()

    def pace(self, usage: Usage) -> Pace | None:
        """The generation's time; a stream stops when another request waits (interrupt_requests)."""
        speed = self.settings.tokens_per_s
        return Pace(usage.output_tokens / speed if speed else 0.0, self._interrupting)

    def _interrupting(self) -> bool:
        return self.settings.interrupt_requests and self.waiting > 0


def _names(tools: list[dict]) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in tools]


def _offered(body: dict, chat_format: str) -> bool:
    """The chat format puts the tools in the model's prompt."""
    if not body.get("tools"):
        return False
    return chat_format == "functionary" or body.get("tool_choice") not in (None, "none")


def _text_finish(reply: FakeReply) -> str | None:
    return None if reply.finish_reason == "tool_calls" else reply.finish_reason


def _raw(call: dict) -> str:
    return call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])


def _forced(reply: FakeReply, name: str) -> dict:
    """The one call a grammar forces: to `name`, with the model's arguments for it (or its first)."""
    calls = [c for c in reply.tool_calls if c["name"] == name] or reply.tool_calls
    return {"name": name, "arguments": calls[0]["arguments"] if calls else {}}


def _functionary(reply: FakeReply, body: dict) -> FakeReply | FakeError:
    """The legacy functionary handler: one call, unstreamed only."""
    if body.get("stream"):
        return _server_error("")  # `assert stream is False`, after the generation
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return replace(reply, content="", tool_calls=[_forced(reply, choice["function"]["name"])])
    if isinstance(choice, str) and choice != "auto":
        return replace(reply, content="", tool_calls=[_forced(reply, choice)])
    return replace(reply, content="", tool_calls=reply.tool_calls[:1]) if reply.tool_calls else reply


def _pieces(text: str) -> list[str]:
    """The text one token (four characters) a chunk."""
    return [text[i:i + 4] for i in range(0, len(text), 4)]


class _Ids:
    """The ids of one reply: "chat" + its completion's id, and its calls' ids."""

    def __init__(self, reply: FakeReply, body: dict, chat_format: str) -> None:
        self.completion = f"cmpl-{uuid.uuid4()}"
        self.model = str(body.get("model", ""))
        names = [c["name"] for c in reply.tool_calls]
        self.calls = names if chat_format == "functionary" else \
            [f"call__{n}_{name}_{self.completion}" for n, name in enumerate(names)]

    def envelope(self, obj: str) -> dict:
        """The fields every response and chunk starts with."""
        return {"id": f"chat{self.completion}", "object": obj, "created": int(time.time()), "model": self.model}


def _chunk(ids: _Ids, delta: dict, finish: str | None = None) -> dict:
    return {**ids.envelope("chat.completion.chunk"),
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def _text_chunks(reply: FakeReply, ids: _Ids) -> list[dict]:
    """A role chunk, a content chunk per token, an empty delta with the finish_reason."""
    return [_chunk(ids, {"role": "assistant"}), *(_chunk(ids, {"content": p}) for p in _pieces(reply.content)),
            _chunk(ids, {}, _text_finish(reply) or "stop")]


def _call_chunks(reply: FakeReply, ids: _Ids) -> list[dict]:
    """A forced call: every chunk repeats the name, with the arguments' next token."""
    call, none = reply.tool_calls[0], {"role": None, "content": None, "function_call": None, "tool_calls": None}

    def piece(text: str) -> dict:
        function = {"name": call["name"], "arguments": text}
        return _chunk(ids, {**none, "function_call": function,
                            "tool_calls": [{"index": 0, "id": ids.calls[0], "type": "function", "function": function}]})

    return [_chunk(ids, {**none, "role": "assistant"}), *(piece(p) for p in _pieces(_raw(call)) or [""]),
            _chunk(ids, none, "tool_calls")]
