"""The fake provider's HTTP server: one task per connection, inside the caller's event loop.

Each chat request is checked against the personality's rules, then gets its fault (if the plan
gives it one), then the responder's answer in the personality's shape. What was refused and
what was billed are kept for the tests.
"""

from __future__ import annotations

import inspect
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from gitswarm.fakeserver import catalog, wire
from gitswarm.fakeserver.billing import Charge, charge
from gitswarm.fakeserver.faults import CONSUMING, FaultPlan
from gitswarm.fakeserver.personalities import personality as make_personality
from gitswarm.fakeserver.personality import Personality, Settings
from gitswarm.fakeserver.responders import Answer, FakeError, FakeReply, Responder, ScriptExhausted
from gitswarm.fakeserver.streaming import send_events

_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, ConnectionError)
_ERROR_FAULTS = ("rate_limit", "server_error", "unavailable")


@dataclass
class RequestRecord:
    """What happened to one chat request: its index, the fault injected, the status sent."""

    index: int
    fault: str | None
    stream: bool
    status: int | None = None
    """None while in flight, or when the connection was dropped without a status."""
    error: str | None = None
    """The message of the error it was answered with, if any."""
    rejected: bool = False
    """Refused by the personality's rules (not a fault, not the responder's scripted error)."""
    usage: dict | None = None
    """The usage object the reply reported, in the provider's shape."""
    charge: Charge | None = None
    """What the reply was billed; None unless a reply was delivered whole."""
    interrupted: bool = False
    """The stream was ended early, without its finish, because another request came (llama-cpp)."""


@dataclass(frozen=True)
class Rejection:
    """A request the personality's rules refused: which one (None: not even JSON), how, and why."""

    index: int | None
    status: int
    message: str


class FakeServer:
    """State of a running fake server; tests assert on `requests`, `records`, `rejections`,
    `bill_usd()` and the counters."""

    def __init__(self, responder: Responder, faults: FaultPlan, port: int, persona: Personality) -> None:
        self.responder = responder
        self.faults = faults
        self.port = port
        self.personality = persona
        self.url = persona.url(port)
        """The api_base to give litellm (for `anthropic`: the origin, without /v1)."""
        self.requests: list[dict] = []
        """JSON bodies of the chat requests as received, in arrival order (index = position)."""
        self.records: list[RequestRecord] = []
        self.rejections: list[Rejection] = []
        self.injected: Counter[str] = Counter()
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def charges(self) -> list[Charge]:
        """What each billed reply cost, in request order."""
        return [r.charge for r in self.records if r.charge is not None]

    def bill_usd(self) -> float:
        """The total the fake provider billed, at its own published-price table."""
        return sum(c.usd for c in self.charges)

    async def handle(self, stream: SocketStream) -> None:
        """Serve one connection until the client closes it (keep-alive)."""
        self.connections += 1
        buffered = BufferedByteReceiveStream(stream)
        try:
            async with stream:
                while (request := await self._next(stream, buffered)) is not None:
                    if not await self._dispatch(stream, buffered, request) or not request.keep_alive:
                        return
        except _GONE:
            return  # the client went away mid-reply; nothing to clean up

    async def _next(self, stream: SocketStream, buffered: BufferedByteReceiveStream) -> wire.Request | None:
        try:
            return await wire.read_request(buffered)
        except wire.HttpError as exc:
            await stream.send(wire.json_reply(exc.status, wire.error_body(exc.message), keep_alive=False))
            return None

    async def _dispatch(self, stream: SocketStream, buffered: BufferedByteReceiveStream,
                        request: wire.Request) -> bool:
        persona = self.personality
        if request.method == "POST" and request.path in persona.chat_paths:
            return await self._chat(stream, buffered, request)
        if request.method == "GET" and request.path in persona.model_paths:
            names = sorted({str(body.get("model", "fake-model")) for body in self.requests} | {"fake-model"})
            await stream.send(wire.json_reply(200, persona.models(names)))
            return True
        await stream.send(persona.error_reply(FakeError(404, f"no route {request.method} {request.path}")))
        return True

    async def _chat(self, stream: SocketStream, buffered: BufferedByteReceiveStream,
                    request: wire.Request) -> bool:
        try:
            body = json.loads(request.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            self.rejections.append(Rejection(None, 400, "request body is not a JSON object"))
            await stream.send(self.personality.error_reply(FakeError(400, "request body is not a JSON object")))
            return True
        record = RequestRecord(len(self.requests), self.faults.fault_for(len(self.requests)),
                               bool(body.get("stream")))
        self.requests.append(body)
        self.records.append(record)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await anyio.sleep(self.faults.latency_s)
            return await self._answer(stream, buffered, request, body, record)
        finally:
            self.in_flight -= 1

    async def _answer(self, stream: SocketStream, buffered: BufferedByteReceiveStream, request: wire.Request,
                      body: dict, record: RequestRecord) -> bool:
        persona = self.personality
        refusal = persona.authenticate(request.headers) or persona.validate(body)
        if refusal is not None:
            record.fault, record.rejected = None, True  # a refused request gets no fault
            self.rejections.append(Rejection(record.index, refusal.status, refusal.message))
            return await self._send(stream, buffered, record, refusal)
        if record.fault:
            self.injected[record.fault] += 1
        async with persona.turn():
            settled = await self._fault(stream, buffered, record, body)
            if settled is not None:
                return settled
            neutral = persona.neutral(body)
            answer = await self._ask(neutral)
            if isinstance(answer, FakeReply):
                answer = persona.handle(answer, body)
            if record.fault in CONSUMING and isinstance(answer, FakeReply):
                answer = persona.spoil(answer, record.fault, neutral)
            return await self._send(stream, buffered, record, answer)

    async def _fault(self, stream: SocketStream, buffered: BufferedByteReceiveStream, record: RequestRecord,
                     body: dict) -> bool | None:
        """Answer a fault that replaces the responder's reply; None when there is none to answer."""
        fault, persona = record.fault, self.personality
        if fault == "reset":
            await wire.reset(stream)
            return False
        if fault == "timeout" or (fault == "stall" and not record.stream):
            await wire.wait_for_close(buffered)
            return False
        if fault in _ERROR_FAULTS:
            return await self._send(stream, buffered, record, persona.fault_error(fault, self.faults))
        if fault == "malformed_json":
            return await self._send(stream, buffered, record, b'{"id": "chatcmpl-broken", "choices": [{"mess')
        if fault == "empty":
            return await self._send(stream, buffered, record, persona.empty(body, record.index))
        if fault in ("truncated_stream", "stall"):
            return await self._send(stream, buffered, record, FakeReply(content="x" * 64))
        return None

    async def _ask(self, request: dict) -> Answer:
        try:
            answer = self.responder(request)
            return await answer if inspect.isawaitable(answer) else answer
        except ScriptExhausted as exc:
            return FakeError(500, str(exc), "server_error")

    async def _send(self, stream: SocketStream, buffered: BufferedByteReceiveStream, record: RequestRecord,
                    answer: Answer | bytes) -> bool:
        """Send one answer; returns whether the connection stays usable."""
        if isinstance(answer, FakeError):
            record.status, record.error = answer.status, answer.message
            await stream.send(self.personality.error_reply(answer))
            return True
        record.status = 200
        if isinstance(answer, FakeReply):
            return await self._reply(stream, buffered, record, answer)
        await stream.send(wire.json_reply(200, answer))  # raw JSON from the responder, or broken bytes
        return True

    async def _reply(self, stream: SocketStream, buffered: BufferedByteReceiveStream, record: RequestRecord,
                     reply: FakeReply) -> bool:
        persona, body, fault = self.personality, self.requests[record.index], record.fault
        usage, record.usage = persona.account(reply, body)
        pace = persona.pace(usage)
        if record.stream:
            events = persona.events(reply, body, record.index, record.usage)
            head = wire.sse_head(persona.reply_headers())
            whole = await send_events(stream, buffered, head, events, fault=fault, plan=self.faults,
                                      keepalive=persona.keepalive, pace=pace)
            record.interrupted = bool(pace and pace.interrupted)
        else:
            await anyio.sleep(self.faults.slow_stream_s if fault == "slow_stream" else pace.seconds if pace else 0)
            data = wire.json_reply(200, persona.render(reply, body, record.index, record.usage),
                                   persona.reply_headers())
            whole = fault != "truncated_stream"
            await stream.send(data if whole else data[: len(data) - len(data) // 3])
        if whole and not record.interrupted:
            model = str(body.get("model", ""))
            record.charge = charge(record.index, model, usage, persona.catalog.spec(model))
        return whole


@asynccontextmanager
async def serve(responder: Responder, faults: FaultPlan | None = None, *, port: int = 0,
                personality: str = "openai", output_limits: Mapping[str, int] | None = None,
                default_output_limit: int = catalog.DEFAULT_OUTPUT_LIMIT, api_key: str | None = None,
                clock: Callable[[], float] = time.monotonic, tokens_per_s: float | None = None,
                interrupt_requests: bool = True, chat_format: str = "chatml-function-calling",
                secret: bytes | None = None) -> AsyncIterator[FakeServer]:
    """Run a fake server on 127.0.0.1 (a free port unless `port` is given) for the block's duration.

    `personality` picks the provider it plays (see personalities.PERSONALITIES); `output_limits`
    overrides model output limits by name, `default_output_limit` is the limit of unknown
    models, `api_key` (where the provider checks keys) is the only key accepted, and `clock`
    is the time prompt caches expire by. `tokens_per_s` makes the fake model take its time;
    `interrupt_requests` and `chat_format` configure `llama-cpp` (see personality.Settings).
    `secret` is the key `anthropic` signs thinking with (a random one per server without it):
    two servers given one key play one provider, which accepts each other's signed thinking.
    """
    settings = Settings(output_limits, default_output_limit, api_key, clock, tokens_per_s=tokens_per_s,
                        interrupt_requests=interrupt_requests, chat_format=chat_format, secret=secret)
    persona = make_personality(personality, settings)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    server = FakeServer(responder, faults or FaultPlan(), listener.extra(SocketAttribute.local_port), persona)
    try:
        async with listener, anyio.create_task_group() as group:
            group.start_soon(listener.serve, server.handle)
            try:
                yield server
            finally:
                group.cancel_scope.cancel()
    except BaseExceptionGroup as failed:
        # The caller's block runs inside our task group; give its exception back unwrapped.
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from None
        raise
