"""Each model call of an episode as litellm got it and returned it, recorded at the client boundary.

An episode opens a `CallLog` (`CallLog.open`); every attempt the client sends while it is open
is noted by `attempt`: the arguments `litellm.acompletion` received (the messages as sent, in
the text protocol when that was used; never the api key), the response's message as litellm
returned it (content, tool call ids and arguments as the model sent them, thinking blocks and
their signatures, reasoning content), the finish reason, the usage, the times, or the error.
The log rides a `ContextVar`: one client serves every episode of a run at once, and each
episode runs in its own task, whose context is its own; calls made outside an episode (the
merger's summaries, the referee's judge) are not recorded. `engine.conversation` stores it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from gitswarm.models.errors import ModelError
from gitswarm.models.reply import Reply
from gitswarm.usage import Usage

_CURRENT: ContextVar[CallLog | None] = ContextVar("gitswarm_call_log", default=None)

_NOT_KEPT = frozenset({"messages", "tools", "api_key", "api_base", "timeout"})
"""Arguments kept elsewhere in the record (messages, tools), or never: the key, and the base URL,
which may carry credentials of its own."""


@dataclass
class CallLog:
    """The calls of one episode: the parameters and tools of its first request, then every attempt."""

    params: dict = field(default_factory=dict)
    tools: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set, repr=False)
    """The api keys the requests carried or litellm may have read from the environment
    (`*_API_KEY`), for `engine.conversation` to make sure none is stored."""
    _token: Token | None = field(default=None, repr=False)
    _last: list[dict] = field(default_factory=list, repr=False)

    @classmethod
    def open(cls) -> CallLog:
        """A new log that records the calls of the current task until `close`."""
        log = cls()
        log._token = _CURRENT.set(log)
        return log

    def close(self) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None

    def delta(self, messages: list[dict]) -> dict:
        """A request's messages as kept: how many it shares with the previous request's from the
        start (`kept`), and the rest. An episode's messages grow call by call, and whole copies
        of each would hold its context once per step."""
        kept, last = 0, self._last
        while kept < min(len(last), len(messages)) and last[kept] == messages[kept]:
            kept += 1
        self._last = messages
        return {"kept": kept, "messages": messages[kept:]}


class Attempt:
    """One attempt's entry in the log (or nowhere, outside an episode): `replied` fills it."""

    def __init__(self, entry: dict | None) -> None:
        self.entry = entry

    def replied(self, response: Any, reply: Reply) -> None:
        """The response as litellm returned it, and how the client read its tool calls."""
        if self.entry is None:
            return
        choice = response.choices[0]
        message = _plain(choice.message)
        self.entry["reply"] = {
            "content": message.get("content"),
            "tool_calls": [{"id": c.get("id"), "name": (c.get("function") or {}).get("name"),
                            "arguments": (c.get("function") or {}).get("arguments")}
                           for c in message.get("tool_calls") or []],
            "thinking": message.get("thinking_blocks") or [],
            "reasoning_content": message.get("reasoning_content"),
            "finish_reason": choice.finish_reason,
            "provider_fields": message.get("provider_specific_fields"),
            "read_calls": [{"id": c.id, "name": c.name, "arguments": c.raw_arguments, "error": c.error,
                            "leaked": c.leaked} for c in reply.tool_calls],
        }
        self.entry["usage"] = usage_of(reply.usage, _plain(getattr(response, "usage", None)))


@contextlib.contextmanager
def attempt(args: dict, tools: list[dict] | None, protocol: str) -> Iterator[Attempt]:
    """Note one attempt with the `litellm.acompletion` arguments `args`, offering `tools` by
    `protocol` (native, or text: in the messages); its error, if it raises, is noted too."""
    log = _CURRENT.get()
    if log is None:
        yield Attempt(None)
        return
    if not log.calls:
        log.tools = _plain(tools or [])
        log.params = {"model": args.get("model"), "reasoning_effort": args.get("reasoning_effort"),
                      "max_output_tokens": args.get("max_tokens"), "tool_protocol": protocol,
                      "temperature": args.get("temperature"), "stream": bool(args.get("stream"))}
    log.secrets.update(v for k, v in os.environ.items() if k.endswith("_API_KEY") and v)  # litellm's fallback
    if args.get("api_key"):
        log.secrets.add(args["api_key"])
    request = {**log.delta(_plain(args["messages"])), "protocol": protocol,
               **_plain({k: v for k, v in args.items() if k not in _NOT_KEPT})}
    entry: dict[str, object] = {"started": time.time(), "ended": None, "request": request, "reply": None,
                                "usage": None, "error": None}
    log.calls.append(entry)
    try:
        yield Attempt(entry)
    except ModelError as exc:
        entry["error"] = f"{exc.kind}: {exc}"
        entry["usage"] = usage_of(exc.usage)
        raise
    except BaseException as exc:  # cancelled (the episode's wall clock, a stop): noted, never held up
        entry["error"] = f"{type(exc).__name__}: {exc}".rstrip(": ")
        raise
    finally:
        entry["ended"] = time.time()


def usage_of(usage: Usage, raw: Any = None) -> dict:
    """One call's usage in the record's words, with the provider's own usage object as `raw`."""
    return {"input_tokens": usage.tokens_in, "output_tokens": usage.tokens_out, "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write, "reasoning_tokens": usage.reasoning,
            "estimated_tokens": usage.estimated_tokens, "cost_usd": usage.cost_usd, "raw": raw}


def _plain(value: Any) -> Any:
    """A JSON copy: the engine's message list grows after the call, and litellm's objects are
    pydantic models (their own dump, else their text)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    return json.loads(json.dumps(value, default=_dumped, ensure_ascii=False))


def _dumped(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else str(value)
