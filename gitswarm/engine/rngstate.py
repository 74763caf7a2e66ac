"""The scheduler's random state as the ledger keeps it, so a resumed run makes the same choices."""

from __future__ import annotations

import base64
import random
import struct


def json_state(state: tuple) -> list:
    """The Mersenne Twister's 625 words as one base64 string: the ledger writes this on every
    flush, and as a JSON list of numbers it was the flush's slowest part."""
    words = struct.pack(f"<{len(state[1])}I", *state[1])
    return [state[0], base64.b64encode(words).decode(), state[2]]


def restore_rng(seed: int | str, state: list | None) -> random.Random:
    """The scheduler's random state as the last run left it (resume keeps determinism); a
    string seed (a remote worker's: the run's seed and its name) is hashed as `random` does."""
    rng = random.Random(seed)
    if state:
        words = state[1]
        if isinstance(words, str):
            raw = base64.b64decode(words)
            words = struct.unpack(f"<{len(raw) // 4}I", raw)
        rng.setstate((state[0], tuple(words), state[2]))
    return rng
