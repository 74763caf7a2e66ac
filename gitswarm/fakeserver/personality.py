"""A personality is the provider the fake server plays: its routes, rules, shapes and bill.

The base class plays a plain OpenAI-compatible server (the fake's original behaviour, no
rules); subclasses enforce one provider's documented rules. Whatever the personality, the
responder sees an OpenAI-chat-shaped request and answers with a FakeReply or FakeError.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gitswarm.fakeserver import catalog, wire
from gitswarm.fakeserver.billing import Usage
from gitswarm.fakeserver.faults import FaultPlan, spoil
from gitswarm.fakeserver.responders import FakeError, FakeReply, completion_json, openai_usage, stream_json
from gitswarm.fakeserver.streaming import Pace


@dataclass(frozen=True)
class Settings:
    """What a personality is configured with (the keyword arguments of `serve`)."""

    output_limits: Mapping[str, int] | None = None
    """Output limits by model name, over the personality's own table."""
    default_output_limit: int = catalog.DEFAULT_OUTPUT_LIMIT
    """The output limit of a model neither table knows."""
    api_key: str | None = None
    """The one key the server accepts, where the provider checks keys; None: any non-empty key."""
    clock: Callable[[], float] = time.monotonic
    """The time prompt caches expire by (tests may pass a fake clock)."""
    secret: bytes | None = None
    """The key thinking blocks are signed with; None: a random key per server."""
    tokens_per_s: float | None = None
    """How fast the fake model writes: a reply's output tokens take output / tokens_per_s
    seconds, spread over its events when streamed; None: at once."""
    interrupt_requests: bool = True
    """`llama-cpp`: a request that arrives while a reply streams ends that stream early (no
    finish_reason), as llama-cpp-python's server does by default (its --interrupt_requests)."""
    chat_format: str = "chatml-function-calling"
    """`llama-cpp`: the chat format whose tool handling is played, `chatml-function-calling`
    or `functionary` (see llamacpp.py)."""


class Personality:
    """A plain OpenAI-compatible server: chat completions, OpenAI error bodies, no rules."""

    name = "openai"
    chat_paths: tuple[str, ...] = ("/v1/chat/completions", "/chat/completions")
    model_paths: tuple[str, ...] = ("/v1/models", "/models")
    table: Mapping[str, catalog.ModelSpec] = catalog.OPENAI
    keepalive = b": keep-alive\n\n"
    """What a slow stream sends when it has no delta to send (an SSE comment)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.catalog = catalog.Catalog(self.table, settings.output_limits, settings.default_output_limit)

    def url(self, port: int) -> str:
        """The base URL a client (litellm's api_base) is given."""
        return f"http://127.0.0.1:{port}/v1"

    def authenticate(self, headers: Mapping[str, str]) -> FakeError | None:
        """The error for a request whose headers the provider refuses, checked before any fault."""
        return None

    def validate(self, body: dict) -> FakeError | None:
        """The error for a request breaking one of the provider's rules."""
        return None

    def neutral(self, body: dict) -> dict:
        """The request as the responder sees it: OpenAI chat shape."""
        return body

    def handle(self, reply: FakeReply, body: dict) -> FakeReply | FakeError:
        """What the server makes of the model's reply (the responder's) to this request."""
        return reply

    def turn(self) -> contextlib.AbstractAsyncContextManager[object]:
        """Held while one chat request is answered, after its rules were checked: a server that
        generates one reply at a time makes the others wait here."""
        return contextlib.nullcontext()

    def pace(self, usage: Usage) -> Pace | None:
        """How long the reply takes to generate (Settings.tokens_per_s); None: no time at all."""
        speed = self.settings.tokens_per_s
        return Pace(usage.output_tokens / speed) if speed else None

    def fault_error(self, fault: str, plan: FaultPlan) -> FakeError:
        """The error an injected rate_limit, server_error or unavailable fault answers with."""
        if fault == "rate_limit":
            wait = plan.retry_after_s
            headers = {"Retry-After": str(math.ceil(wait)), "retry-after-ms": str(round(wait * 1000))}
            return FakeError(429, "Rate limit reached (injected fault)", "requests", "rate_limit_exceeded",
                             headers)
        status = 500 if fault == "server_error" else 503
        return FakeError(status, f"Injected {status} fault", "server_error")

    def error_reply(self, error: FakeError) -> bytes:
        """A complete HTTP reply carrying the error in the provider's shape."""
        return wire.json_reply(error.status, error.body(), error.headers)

    def spoil(self, reply: FakeReply, fault: str, request: dict) -> FakeReply:
        """A reply-level fault applied to the responder's reply (request: the neutral form)."""
        names = [t.get("function", {}).get("name", "") for t in request.get("tools") or []]
        return spoil(reply, fault, names)

    def account(self, reply: FakeReply, body: dict) -> tuple[Usage, dict]:
        """What this reply costs, and the usage object the provider reports for it."""
        reported = openai_usage(reply, body)
        return Usage(reported["prompt_tokens"], reported["completion_tokens"]), reported

    def render(self, reply: FakeReply, body: dict, index: int, usage: dict) -> dict:
        """The reply's JSON body."""
        return completion_json(reply, body, index)

    def events(self, reply: FakeReply, body: dict, index: int, usage: dict) -> list[bytes]:
        """The reply as server-sent events, the terminating one included."""
        chunks = [wire.sse(json.dumps(c)) for c in stream_json(reply, body, index)]
        return [*chunks, wire.sse("[DONE]")]

    def empty(self, body: dict, index: int) -> dict:
        """A 200 with nothing in it (the `empty` fault)."""
        return {**completion_json(FakeReply(), body, index), "choices": []}

    def models(self, names: list[str]) -> dict:
        """The body of GET /v1/models."""
        return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "gitswarm-fake"}
                                           for m in names]}

    def reply_headers(self) -> dict[str, str]:
        """Extra headers of a successful reply."""
        return {}
