"""The fake OpenAI-compatible server: one task per connection, inside the caller's event loop."""

from __future__ import annotations

import inspect
import json
import math
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from gitswarm.fakeserver import wire
from gitswarm.fakeserver.faults import CONSUMING, FaultPlan, spoil
from gitswarm.fakeserver.responders import (
    Answer,
    FakeError,
    FakeReply,
    Responder,
    ScriptExhausted,
    completion_json,
    stream_json,
)

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODEL_PATHS = ("/v1/models", "/models")
_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, ConnectionError)


@dataclass
class RequestRecord:
    """What happened to one chat request: its index, the fault injected, the status sent."""

    index: int
    fault: str | None
    stream: bool
    status: int | None = None
    """None while in flight, or when the connection was dropped without a status."""


class FakeServer:
    """State of a running fake server; tests assert on `requests`, `records` and the counters."""

    def __init__(self, responder: Responder, faults: FaultPlan, port: int) -> None:
        self.responder = responder
        self.faults = faults
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        self.requests: list[dict] = []
        """JSON bodies of the chat requests, in arrival order (index = position)."""
        self.records: list[RequestRecord] = []
        self.injected: Counter[str] = Counter()
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0

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
        if request.method == "POST" and request.path in CHAT_PATHS:
            return await self._chat(stream, buffered, request)
        if request.method == "GET" and request.path in MODEL_PATHS:
            models = sorted({str(body.get("model", "fake-model")) for body in self.requests} | {"fake-model"})
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "gitswarm-fake"} for m in models]
            await stream.send(wire.json_reply(200, {"object": "list", "data": data}))
            return True
        await stream.send(wire.json_reply(404, wire.error_body(f"no route {request.method} {request.path}")))
        return True

    async def _chat(self, stream: SocketStream, buffered: BufferedByteReceiveStream,
                    request: wire.Request) -> bool:
        try:
            body = json.loads(request.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            await stream.send(wire.json_reply(400, wire.error_body("request body is not a JSON object")))
            return True
        record = RequestRecord(len(self.requests), self.faults.fault_for(len(self.requests)),
                               bool(body.get("stream")))
        self.requests.append(body)
        self.records.append(record)
        if record.fault:
            self.injected[record.fault] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await anyio.sleep(self.faults.latency_s)
            return await self._answer(stream, buffered, body, record)
        finally:
            self.in_flight -= 1

    async def _answer(self, stream: SocketStream, buffered: BufferedByteReceiveStream, body: dict,
                      record: RequestRecord) -> bool:
        fault = record.fault
        if fault == "reset":
            await wire.reset(stream)
            return False
        if fault == "timeout":
            await wire.wait_for_close(buffered)
            return False
        if fault in ("rate_limit", "server_error", "unavailable"):
            return await self._send(stream, record, self._fault_error(fault))
        if fault == "malformed_json":
            return await self._send(stream, record, b'{"id": "chatcmpl-broken", "choices": [{"mess')
        if fault == "empty":
            return await self._send(stream, record, {**completion_json(FakeReply(), body, record.index),
                                                     "choices": []})
        if fault == "truncated_stream":
            return await self._send(stream, record, FakeReply(content="x" * 64), cut=True)
        answer = await self._ask(body)
        if fault in CONSUMING and isinstance(answer, FakeReply):
            names = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
            answer = spoil(answer, fault, names)
        return await self._send(stream, record, answer)

    async def _ask(self, body: dict) -> Answer:
        try:
            answer = self.responder(body)
            return await answer if inspect.isawaitable(answer) else answer
        except ScriptExhausted as exc:
            return FakeError(500, str(exc), "server_error")

    def _fault_error(self, fault: str) -> FakeError:
        if fault == "rate_limit":
            wait = self.faults.retry_after_s
            headers = {"Retry-After": str(math.ceil(wait)), "retry-after-ms": str(round(wait * 1000))}
            return FakeError(429, "Rate limit reached (injected fault)", "requests", "rate_limit_exceeded",
                             headers)
        status = 500 if fault == "server_error" else 503
        return FakeError(status, f"Injected {status} fault", "server_error")

    async def _send(self, stream: SocketStream, record: RequestRecord, answer: Answer | bytes,
                    *, cut: bool = False) -> bool:
        """Send one answer; returns whether the connection stays usable."""
        if isinstance(answer, FakeError):
            record.status = answer.status
            await stream.send(wire.json_reply(answer.status, answer.body(), answer.headers))
            return True
        record.status = 200
        if isinstance(answer, FakeReply) and record.stream:
            return await self._stream(stream, answer, record, cut)
        payload = completion_json(answer, self.requests[record.index], record.index) \
            if isinstance(answer, FakeReply) else answer
        data = wire.json_reply(200, payload)
        if cut:
            await stream.send(data[: len(data) - len(data) // 3])
            return False
        await stream.send(data)
        return True

    async def _stream(self, stream: SocketStream, reply: FakeReply, record: RequestRecord, cut: bool) -> bool:
        events = [json.dumps(c) for c in stream_json(reply, self.requests[record.index], record.index)]
        events.append("[DONE]")
        if cut:
            events = events[: max(1, len(events) // 2)]
        await stream.send(wire.sse_head() + b"".join(wire.sse_chunk(e) for e in events))
        if cut:
            return False
        await stream.send(wire.LAST_CHUNK)
        return True


@asynccontextmanager
async def serve(responder: Responder, faults: FaultPlan | None = None, *,
                port: int = 0) -> AsyncIterator[FakeServer]:
    """Run a fake server on 127.0.0.1 (a free port unless `port` is given) for the block's duration."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    server = FakeServer(responder, faults or FaultPlan(), listener.extra(SocketAttribute.local_port))
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
