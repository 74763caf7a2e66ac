"""The cyclic garbage collector over a run's loop: what is alive as the loop starts is left out
of its passes.

By the time a run's loop starts, most objects the process tracks live as long as it: the modules
and their tables (litellm's model map and its types among them) and the run's records as
loaded. CPython's collector walks every object it tracks at each of its full passes, a few in
every thousand model calls, and in the engine at C = 256 those passes were half of its
collecting: 1.0-1.2 of 2.3-2.5 ms per model call, and 0.2 of 1.3 with this (docs/benchmarks.md,
"The garbage collector's full passes"). `gc.freeze()` moves what is tracked now to a generation
no pass walks; `gc.unfreeze()` gives it back when the loop ends. Objects made during the loop,
the run's own, are collected as before.

Nothing is collected first: a full pass over a resumed run's index costs seconds, and the
little garbage there is at that point (cycles left by imports) is only kept until the loop
ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
"""Loops running in this process (tests run several): the first freezes, the last gives back."""


@contextmanager
def frozen() -> Iterator[None]:
    """Run the block with every object alive now out of the collector's passes."""
    global _depth
    with _lock:
        if _depth == 0:
            gc.freeze()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
