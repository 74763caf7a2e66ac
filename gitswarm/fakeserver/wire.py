"""The server side of HTTP/1.1, as little as the OpenAI client needs.

Keep-alive connections, Content-Length request bodies, JSON replies with a length, and
chunked replies for server-sent events. No pipelining and no chunked request bodies.
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import dataclass
from http import HTTPStatus

import anyio
from anyio.abc import ByteStream, SocketAttribute
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
LAST_CHUNK = b"0\r\n\r\n"


class HttpError(Exception):
    """A request we cannot parse; answered with `status`, then the connection is closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Request:
    """One parsed request; header names are lower case."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


async def read_request(stream: BufferedByteReceiveStream) -> Request | None:
    """The next request on a connection, or None when the client has closed it."""
    try:
        head = await stream.receive_until(b"\r\n\r\n", MAX_HEAD)
    except anyio.DelimiterNotFound as exc:
        raise HttpError(431, "request head too large") from exc
    except (anyio.EndOfStream, anyio.IncompleteRead):
        return None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ", 2)
        headers = {name.strip().lower(): value.strip()
                   for name, _, value in (line.partition(":") for line in lines[1:] if line)}
        length = int(headers.get("content-length", "0"))
    except ValueError as exc:
        raise HttpError(400, f"malformed request head: {lines[0][:80]!r}") from exc
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(501, "chunked request bodies are not supported")
    if not 0 <= length <= MAX_BODY:
        raise HttpError(413, f"request body of {length} bytes refused")
    try:
        body = await stream.receive_exactly(length) if length else b""
    except (anyio.EndOfStream, anyio.IncompleteRead):
        return None
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return Request(method, target.split("?", 1)[0], headers, body, keep_alive)


def head(status: int, headers: dict[str, str]) -> bytes:
    """The status line and headers of a reply."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Unknown"
    lines = [f"HTTP/1.1 {status} {phrase}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_reply(status: int, payload: object, headers: dict[str, str] | None = None,
               *, keep_alive: bool = True) -> bytes:
    """A complete reply carrying `payload` as JSON (bytes are sent as they are)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    fields = {"Content-Type": "application/json", "Content-Length": str(len(body)),
              "Connection": "keep-alive" if keep_alive else "close", **(headers or {})}
    return head(status, fields) + body


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None,
               param: str | None = None) -> dict:
    """An error in the shape OpenAI's API uses."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def sse_head(headers: dict[str, str] | None = None) -> bytes:
    """The head of a server-sent-events reply, sent with chunked transfer encoding."""
    return head(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                      "Transfer-Encoding": "chunked", "Connection": "keep-alive", **(headers or {})})


def sse(data: str, event: str | None = None) -> bytes:
    """One server-sent event: an optional `event:` name line, then its data line."""
    named = f"event: {event}\n" if event else ""
    return f"{named}data: {data}\n\n".encode()


def chunk(payload: bytes) -> bytes:
    """One HTTP chunk of a chunked reply."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def sse_chunk(data: str) -> bytes:
    """One server-sent event wrapped in one HTTP chunk."""
    return chunk(sse(data))


async def reset(stream: ByteStream) -> None:
    """Drop the connection with a TCP reset (SO_LINGER 0), as a crashing server would."""
    sock = stream.extra(SocketAttribute.raw_socket, None)
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await stream.aclose()


async def wait_for_close(stream: BufferedByteReceiveStream) -> None:
    """Hold a connection without answering until the client gives up and closes it."""
    try:
        while True:
            await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return
