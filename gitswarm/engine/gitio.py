"""All git work of the process goes through one thread: pygit2 holds the GIL while it works,
so more writer threads would only queue, and the event loop must never wait on git."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


class GitThread:
    """Runs memory calls one at a time in a worker thread. A call that has started always
    finishes, even when its caller is cancelled, so a stop never leaves a half-done write."""

    def __init__(self) -> None:
        self._limiter = anyio.CapacityLimiter(1)

    async def __call__(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)
