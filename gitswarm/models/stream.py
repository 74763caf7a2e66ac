"""Reading a streamed reply: chunk by chunk, cut when the stream goes silent, then joined
into one response by litellm's own chunk builder (usage, tool calls, thinking blocks), and
whether its usage was the provider's count or litellm's."""

from __future__ import annotations

from typing import Any

import anyio

from gitswarm.models.lib import litellm_module


class StreamEmpty(Exception):
    """The stream ended without a single chunk (a body that was not an event stream, or none)."""


class StreamIdle(Exception):
    """The stream sent nothing for the idle timeout; `chunks` is what had arrived."""

    def __init__(self, idle_s: float, chunks: list) -> None:
        super().__init__(f"the stream sent nothing for {idle_s:.0f} s (idle timeout)")
        self.chunks = chunks


async def collect(stream: Any, idle_s: float, chunks: list) -> None:
    """Append the stream's chunks to `chunks` until it ends; raise StreamIdle after `idle_s`
    without a chunk. The wait for the first chunk is not an idle wait: a reasoning model may
    think for many minutes before it sends anything, and the reply timeout bounds that."""
    iterator = stream.__aiter__()
    try:
        while True:
            with anyio.move_on_after(idle_s if chunks else None) as scope:
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    if not chunks:
                        raise StreamEmpty("the reply stream ended before any part of a reply") from None
                    return
            if scope.cancelled_caught:
                raise StreamIdle(idle_s, chunks)
            chunks.append(chunk)
    finally:
        await close(stream)


async def close(stream: Any) -> None:
    """Close the stream's connection, even while the caller is being cancelled."""
    closer = getattr(stream, "aclose", None)
    if closer is None:
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        try:
            await closer()
        except Exception:  # the connection is already broken; nothing left to release
            return


def counted_by_server(stream: Any) -> bool:
    """Whether the provider's stream itself carried the reply's usage. The chunks litellm hands
    over cannot tell: when the provider sent no usage, litellm's stream adds a last chunk with
    its own count (its tokenizer's, over the prompt and the reply). Its `chunks` keep what came
    from the provider, usage included; a stream without them (not litellm's) counts as counted."""
    kept = getattr(stream, "chunks", None)
    if kept is None:
        return True
    return any(getattr(chunk, "usage", None) is not None for chunk in kept)


def joined(chunks: list, messages: list[dict]) -> Any:
    """One response from the chunks, as a non-streamed call would have returned it."""
    return litellm_module().stream_chunk_builder(chunks, messages=messages)
