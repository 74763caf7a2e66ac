"""Deterministic fault injection for the fake server."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gitswarm.fakeserver.responders import FakeReply

FAULTS: dict[str, str] = {
    "rate_limit": "429 with Retry-After",
    "server_error": "500",
    "unavailable": "503",
    "reset": "connection reset without a response",
    "timeout": "no response until the client gives up",
    "malformed_json": "200 whose body is not JSON",
    "empty": "200 with no choices",
    "malformed_args": "tool-call arguments that are not valid JSON",
    "truncated": 'finish_reason "length" with the content cut',
    "truncated_stream": "the response body or event stream cut mid-way",
    "slow_stream": "a streamed reply trickled over slow_stream_s, a delta or keep-alive every trickle_s",
    "stall": "a stream's headers and first event, then silence until the client goes away",
}
"""Every fault the server can inject, with what the client sees."""

CONSUMING = frozenset({"malformed_args", "truncated", "slow_stream"})
"""Faults that spoil a real reply, so they use up one reply of the responder; the others
happen before the responder is asked, so a retry gets the reply the fault displaced."""


@dataclass(frozen=True)
class FaultPlan:
    """Which chat requests fail, and how; the same plan and request index give the same fault."""

    latency_s: float = 0.0
    """Delay before answering every chat request (faults included)."""
    at: Mapping[int, str | None] = field(default_factory=dict)
    """Explicit faults by request index (0-based, counting chat requests); None means no fault."""
    rate: float = 0.0
    """Probability that a request not listed in `at` gets a fault drawn from `kinds`."""
    kinds: tuple[str, ...] = ("rate_limit", "server_error")
    """The faults drawn when `rate` fires."""
    seed: int = 0
    """Seed of the random draws; each request index has its own stream, so concurrency
    does not change which index gets which fault."""
    retry_after_s: float = 1.0
    """What a 429 announces in Retry-After (whole seconds) and retry-after-ms."""
    slow_stream_s: float = 1.0
    """How long a `slow_stream` reply takes from its first event to its last."""
    trickle_s: float = 0.1
    """The gap between two events of a `slow_stream` reply (a delta, or a keep-alive)."""

    def __post_init__(self) -> None:
        unknown = {f for f in (*self.at.values(), *self.kinds) if f is not None and f not in FAULTS}
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be within [0, 1], got {self.rate}")
        if self.trickle_s <= 0 or self.slow_stream_s < 0:
            raise ValueError("a slow stream needs trickle_s > 0 and slow_stream_s >= 0")

    @classmethod
    def first(cls, *faults: str | None, **options: float) -> FaultPlan:
        """The first requests get `faults` in order; later ones are answered normally."""
        return cls(at=dict(enumerate(faults)), **options)  # type: ignore[arg-type]

    def fault_for(self, index: int) -> str | None:
        """The fault of the chat request with this index, if any."""
        if index in self.at:
            return self.at[index]
        if self.rate <= 0.0:
            return None
        draw = random.Random(f"{self.seed}:{index}")
        return draw.choice(self.kinds) if draw.random() < self.rate else None


def spoil(reply: FakeReply, fault: str, tool_names: list[str], *, partial_calls: bool = False) -> FakeReply:
    """Apply a reply-level fault (malformed_args or truncated) to a well-formed reply. A truncated
    reply drops its tool calls, or with `partial_calls` keeps the first one with half its arguments."""
    if fault not in ("malformed_args", "truncated"):
        return reply
    if fault == "truncated":
        calls = [_halved(reply.tool_calls[0])] if partial_calls and reply.tool_calls else []
        return replace(reply, content=reply.content[: len(reply.content) // 2], tool_calls=calls,
                       finish_reason="length")
    calls = reply.tool_calls or [{"name": (tool_names or ["broken"])[0], "arguments": {"x": 1}}]
    broken = [{**call, "arguments": '{"' + str(call["name"]) + '": [1, 2'} for call in calls]
    return replace(reply, tool_calls=broken)


def _halved(call: dict) -> dict:
    raw = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
    return {**call, "arguments": raw[: len(raw) // 2]}
