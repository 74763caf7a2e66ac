"""The `anthropic` personality: the Messages API at POST /v1/messages.

litellm reaches it with `litellm.acompletion(model="anthropic/<name>", api_base=server.url,
api_key=...)`: litellm appends `/v1/messages` to a custom api_base, so `server.url` is the bare
origin `http://127.0.0.1:<port>` (a base ending in /v1 would be asked for /v1/v1/messages).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping

from gitswarm.fakeserver import anthropic_render as render
from gitswarm.fakeserver import catalog, wire
from gitswarm.fakeserver.anthropic_rules import authenticate, content_blocks, validate
from gitswarm.fakeserver.billing import Usage
from gitswarm.fakeserver.caching import PromptCache, blocks
from gitswarm.fakeserver.faults import FaultPlan, spoil
from gitswarm.fakeserver.personality import Personality, Settings
from gitswarm.fakeserver.responders import FakeError, FakeReply
from gitswarm.fakeserver.thinking import Signer

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error"}
"""Anthropic's error types by HTTP status, as its errors page lists them."""
RATE_LIMITED = ("This request would exceed the rate limit for your organization of 50 requests per minute. "
                "For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response "
                "headers for current usage. Please reduce the prompt length or the maximum tokens requested, "
                "or try again later.")
PASSED_ON = ("model", "max_tokens", "stream", "temperature", "top_p", "top_k", "thinking", "stop_sequences",
             "metadata")


class AnthropicPersonality(Personality):
    """Anthropic's Messages API: its headers, rules, error bodies, stream events, prompt cache
    and signed thinking blocks."""

    name = "anthropic"
    chat_paths = ("/v1/messages",)
    model_paths = ("/v1/models",)
    table = catalog.ANTHROPIC
    keepalive = render.event("ping", {})

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.signer = Signer(settings.secret)
        self.cache = PromptCache(settings.clock)
        self._request_ids = itertools.count(1)

    def url(self, port: int) -> str:
        """The origin, without /v1: litellm appends /v1/messages itself."""
        return f"http://127.0.0.1:{port}"

    def authenticate(self, headers: Mapping[str, str]) -> FakeError | None:
        """x-api-key and anthropic-version are required."""
        return authenticate(headers, self.settings.api_key)

    def validate(self, body: dict) -> FakeError | None:
        """The Messages API's rules (anthropic_rules)."""
        return validate(body, self.catalog.spec(str(body.get("model", ""))), self.signer)

    def neutral(self, body: dict) -> dict:
        """The request in OpenAI chat shape (thinking and sampling settings passed on)."""
        return neutral_request(body)

    def fault_error(self, fault: str, plan: FaultPlan) -> FakeError:
        """429 rate_limit_error with retry-after; 529 overloaded_error; 500 api_error for `unavailable`."""
        if fault == "rate_limit":
            return FakeError(429, RATE_LIMITED, "rate_limit_error",
                             headers={"retry-after": str(math.ceil(plan.retry_after_s))})
        if fault == "server_error":
            return FakeError(529, "Overloaded", "overloaded_error")
        return FakeError(500, "Internal server error", "api_error")

    def error_reply(self, error: FakeError) -> bytes:
        """`{"type": "error", "error": {"type", "message"}, "request_id"}` with a request-id header."""
        kind = ERROR_TYPES.get(error.status, error.kind)  # the type follows the status, as in Anthropic's table
        request_id = self._request_id()
        body = {"type": "error", "error": {"type": kind, "message": error.message}, "request_id": request_id}
        return wire.json_reply(error.status, body, {"request-id": request_id, **error.headers})

    def spoil(self, reply: FakeReply, fault: str, request: dict) -> FakeReply:
        """A truncated reply keeps its first tool call with half of its input."""
        names = [t.get("function", {}).get("name", "") for t in request.get("tools") or []]
        return spoil(reply, fault, names, partial_calls=True)

    def account(self, reply: FakeReply, body: dict) -> tuple[Usage, dict]:
        """Input split into uncached, cache-read and cache-written parts; thinking is output."""
        spec = self.catalog.spec(body["model"])
        use = self.cache.use(body["model"], blocks(body), spec.min_cache_tokens)
        uncached = use.uncached if reply.prompt_tokens is None else \
            max(0, reply.prompt_tokens - use.read - use.write_5m - use.write_1h)
        usage = Usage(uncached, render.output_tokens(reply, body), use.read, use.write_5m, use.write_1h)
        return usage, render.reported_usage(usage)

    def render(self, reply: FakeReply, body: dict, index: int, usage: dict) -> dict:
        """The `message` object."""
        return render.message(reply, body, index, usage, self.signer)

    def events(self, reply: FakeReply, body: dict, index: int, usage: dict) -> list[bytes]:
        """The documented event stream."""
        return render.events(reply, body, index, usage, self.signer)

    def empty(self, body: dict, index: int) -> dict:
        """A message with no content blocks."""
        usage = render.reported_usage(Usage(0, 0))
        return render.message(FakeReply(), {**body, "thinking": None}, index, usage, self.signer)

    def models(self, names: list[str]) -> dict:
        """The Models API list."""
        data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in names]
        return {"data": data, "has_more": False, "first_id": names[0] if names else None,
                "last_id": names[-1] if names else None}

    def reply_headers(self) -> dict[str, str]:
        """Every reply carries a request-id."""
        return {"request-id": self._request_id()}

    def _request_id(self) -> str:
        return f"req_fake{next(self._request_ids):016d}"


def neutral_request(body: dict) -> dict:
    """An Anthropic request in OpenAI chat shape: system first, tool_result blocks as `tool`
    messages, tool_use blocks as `tool_calls`, thinking text on the assistant message."""
    system = _text(body.get("system"))
    messages = [{"role": "system", "content": system}] if system else []
    for turn in body.get("messages") or []:
        messages += _neutral_turn(turn)
    neutral = {name: body[name] for name in PASSED_ON if name in body}
    neutral["messages"] = messages
    if body.get("tools"):
        neutral["tools"] = [_function(tool) for tool in body["tools"]]
    if body.get("tool_choice"):
        neutral["tool_choice"] = _choice(body["tool_choice"])
    return neutral


def _neutral_turn(turn: dict) -> list[dict]:
    parts = content_blocks(turn.get("content"))
    if turn.get("role") == "user":
        results = [{"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))}
                   for b in parts if b.get("type") == "tool_result"]
        rest = [b for b in parts if b.get("type") != "tool_result"]
        return results + ([{"role": "user", "content": _text(rest)}] if rest or not results else [])
    message: dict = {"role": "assistant", "content": _text(parts) or None}
    calls = [{"id": b.get("id"), "type": "function",
              "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input", {}))}}
             for b in parts if b.get("type") == "tool_use"]
    if calls:
        message["tool_calls"] = calls
    thinking = "".join(b.get("thinking", "") for b in parts if b.get("type") == "thinking")
    if thinking:
        message["thinking"] = thinking
    return [message]


def _text(content: object) -> str:
    """The text of a content (a string, or the text blocks of a list)."""
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content_blocks(content) if b.get("type") == "text" and "text" in b)


def _function(tool: dict) -> dict:
    return {"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description", ""),
                                             "parameters": tool.get("input_schema", {})}}


def _choice(choice: dict) -> object:
    kind = choice.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return "required" if kind == "any" else kind
