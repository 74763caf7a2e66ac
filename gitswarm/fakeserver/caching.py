"""Prompt caches as the providers document them, over the fake's deterministic token estimate.

Anthropic caches explicitly: `cache_control` marks breakpoints on tools, system blocks and
message content blocks; the prefix up to a breakpoint (in the order tools, system, messages)
is written to the cache if it is at least the model's minimum length, lives 5 minutes (or an
hour with `ttl: "1h"`) from its last use, and a later request reads the longest cached prefix
it shares, looking back up to 20 blocks before each of its breakpoints.

OpenAI caches automatically: a prompt of at least 1024 tokens whose prefix was seen recently
reads that prefix from the cache, in steps of 128 tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from gitswarm.fakeserver.responders import estimate_tokens

LOOKBACK_BLOCKS = 20
TTL_S = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True)
class Block:
    """One cacheable unit of an Anthropic prompt: a tool, a system block or a content block."""

    key: str
    tokens: int
    ttl: str | None = None
    """The breakpoint's TTL ("5m" or "1h") when the block carries `cache_control`, else None."""


@dataclass(frozen=True)
class CacheUse:
    """What one request did with the cache, in tokens."""

    total: int
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def uncached(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return self.total - self.read - self.write_5m - self.write_1h


def blocks(body: dict) -> list[Block]:
    """The prompt's blocks in cache order: tools, then system, then each message's content."""
    items = [*(body.get("tools") or []), *_as_blocks(body.get("system"))]
    for message in body.get("messages") or []:
        items += _as_blocks(message.get("content"))
    return [_block(item) for item in items if isinstance(item, dict)]


def breakpoints(body: dict) -> int:
    """How many `cache_control` markers the request carries (tool_result contents included)."""
    items = [*(body.get("tools") or []), *_as_blocks(body.get("system"))]
    for message in body.get("messages") or []:
        for block in _as_blocks(message.get("content")):
            items += [block, *(_as_blocks(block.get("content")) if block.get("type") == "tool_result" else [])]
    return sum(1 for item in items if isinstance(item, dict) and item.get("cache_control"))


def _as_blocks(content: object) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _block(item: dict) -> Block:
    bare = {k: v for k, v in item.items() if k != "cache_control"}
    text = bare["text"] if bare.get("type") == "text" and isinstance(bare.get("text"), str) else json.dumps(bare)
    control = item.get("cache_control")
    ttl = (control.get("ttl") or "5m") if isinstance(control, dict) else None
    return Block(json.dumps(bare, sort_keys=True), estimate_tokens(text), ttl if ttl in TTL_S else None)


class PromptCache:
    """Anthropic's explicit prompt cache, shared by every request to one server."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.entries: dict[str, tuple[float, str]] = {}
        """Prefix hash -> (expiry time, ttl name)."""

    def use(self, model: str, prompt: list[Block], min_tokens: int) -> CacheUse:
        """Read the longest cached prefix, then write the prefixes at the breakpoints beyond it."""
        now = self.clock()
        hashes = list(_prefix_hashes(model, prompt))
        sizes = _running_sums(b.tokens for b in prompt)
        marks = [i for i, b in enumerate(prompt) if b.ttl]
        read_at = self._read(hashes, marks, now)
        read = sizes[read_at] if read_at >= 0 else 0
        written, done = {"5m": 0, "1h": 0}, read
        for i in marks:
            ttl = prompt[i].ttl
            if ttl and i > read_at and sizes[i] >= min_tokens:
                self.entries[hashes[i]] = (now + TTL_S[ttl], ttl)
                written[ttl] += sizes[i] - done
                done = sizes[i]
        return CacheUse(sizes[-1] if sizes else 0, read, written["5m"], written["1h"])

    def _read(self, hashes: list[str], marks: list[int], now: float) -> int:
        """The last position of a live cached prefix within reach of a breakpoint, or -1."""
        reach = sorted({p for m in marks for p in range(max(0, m - LOOKBACK_BLOCKS), m + 1)}, reverse=True)
        for position in reach:
            entry = self.entries.get(hashes[position])
            if entry and entry[0] > now:
                self.entries[hashes[position]] = (now + TTL_S[entry[1]], entry[1])  # a read refreshes it
                return position
        return -1


def _prefix_hashes(model: str, prompt: list[Block]) -> Iterator[str]:
    digest = hashlib.sha256(model.encode())
    for block in prompt:
        digest.update(block.key.encode())
        yield digest.copy().hexdigest()


def _running_sums(values: Iterator[int]) -> list[int]:
    sums, total = [], 0
    for value in values:
        total += value
        sums.append(total)
    return sums


class PrefixCache:
    """OpenAI's automatic prompt cache: shared prefixes of >= 1024 tokens, in 128-token steps."""

    def __init__(self, clock: Callable[[], float], minimum: int = 1024, step: int = 128,
                 ttl_s: float = 600.0) -> None:
        self.clock, self.minimum, self.step, self.ttl_s = clock, minimum, step, ttl_s
        self.seen: dict[str, float] = {}
        """Hash of a prefix of `k * step` tokens -> expiry time."""

    def use(self, model: str, prompt: str) -> int:
        """The cached tokens of this prompt; its own prefixes are remembered for later requests."""
        now = self.clock()
        cached = 0
        for tokens, key in self._prefixes(model, prompt):  # each hash covers its whole prefix
            if self.seen.get(key, 0.0) > now:
                cached = tokens
            self.seen[key] = now + self.ttl_s
        return cached if cached >= self.minimum else 0

    def _prefixes(self, model: str, prompt: str) -> Iterator[tuple[int, str]]:
        """(tokens, hash) of each prefix that ends on a step boundary (four characters a token)."""
        digest = hashlib.sha256(model.encode())
        width = self.step * 4
        for start in range(0, len(prompt) - width + 1, width):
            digest.update(prompt[start:start + width].encode())
            yield (start + width) // 4, digest.copy().hexdigest()
