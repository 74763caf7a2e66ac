"""Sending a reply's server-sent events: all at once, cut short, trickled, or stalled."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from gitswarm.fakeserver import wire
from gitswarm.fakeserver.faults import FaultPlan


def _never() -> bool:
    return False


@dataclass
class Pace:
    """A reply that takes `seconds` to generate: an unstreamed one is sent after them all, a
    streamed one spreads its events over them. After each event sent, `cut` may end the stream
    early with its terminating event only (`interrupted` then says so)."""

    seconds: float
    cut: Callable[[], bool] = _never
    interrupted: bool = False


async def send_events(stream: SocketStream, buffered: BufferedByteReceiveStream, head: bytes,
                      events: list[bytes], *, fault: str | None, plan: FaultPlan, keepalive: bytes,
                      pace: Pace | None = None) -> bool:
    """Send a streamed reply shaped by the fault (truncated_stream, slow_stream, stall, or none)
    or, without one, at the pace of its generation; returns whether the connection stays usable."""
    await stream.send(head)
    if pace is not None and fault is None:
        await _paced(stream, events, pace)
        return True
    if fault == "truncated_stream":
        await stream.send(b"".join(wire.chunk(e) for e in events[: max(1, len(events) // 2)]))
        return False
    if fault == "stall":
        await stream.send(wire.chunk(events[0]))
        await wire.wait_for_close(buffered)
        return False
    if fault == "slow_stream":
        for n, item in enumerate(schedule(events, keepalive, plan.slow_stream_s, plan.trickle_s)):
            if n:
                await anyio.sleep(plan.trickle_s)
            await stream.send(wire.chunk(item))
    else:
        await stream.send(b"".join(wire.chunk(e) for e in events))
    await stream.send(wire.LAST_CHUNK)
    return True


async def _paced(stream: SocketStream, events: list[bytes], pace: Pace) -> None:
    body = events[:-1]
    for n, event in enumerate(body, 1):
        await anyio.sleep(pace.seconds / len(body))
        await stream.send(wire.chunk(event))
        if n < len(body) and pace.cut():
            pace.interrupted = True
            break
    await stream.send(wire.chunk(events[-1]) + wire.LAST_CHUNK)


def schedule(events: list[bytes], keepalive: bytes, total_s: float, gap_s: float) -> list[bytes]:
    """One item per tick of `gap_s` over at least `total_s`: the events spread evenly, first and
    last in place, keep-alives in the gaps."""
    ticks = max(len(events), math.ceil(total_s / gap_s) + 1)
    if len(events) < 2:
        return [*events, *[keepalive] * (ticks - len(events))]
    slots = {round(i * (ticks - 1) / (len(events) - 1)): event for i, event in enumerate(events)}
    return [slots.get(tick, keepalive) for tick in range(ticks)]
