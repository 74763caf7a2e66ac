"""Usage: the one type for tokens and money, from a model call to the ledger, the commit
trailers, `status` and the report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of one call, or of a sum of calls (`+`; `Usage()` is zero).

    `tokens_in` counts every input token, cached ones included; `cache_read` and
    `cache_write` are the parts of it read from and written to the provider's prompt cache.
    `tokens_out` counts every output token; `reasoning` is the part spent thinking.

    A cost is known only while every call in the sum had a price: `cost_usd` is None as soon
    as one did not, and `known_cost_usd` keeps the sum over the calls that had one.
    """

    tokens_in: int = 0
    tokens_out: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    known_cost_usd: float = 0.0
    unpriced_calls: int = 0
    calls: int = 0
    """Attempts that reached the provider and were billed or may have been, failed ones included."""
    failed_calls: int = 0
    """Of `calls`, the attempts that did not yield a usable reply (errors, timeouts, retries)."""
    estimated_tokens: int = 0
    """Of `tokens_in + tokens_out`, those litellm's tokenizer counted because the provider's
    reply carried no count: a stream cut before its end, or a server whose streams carry no
    usage (llama-cpp-python's). Every other token is the provider's own count."""

    @classmethod
    def of_call(cls, tokens_in: int, tokens_out: int, cost_usd: float | None, *, cache_read: int = 0,
                cache_write: int = 0, reasoning: int = 0, failed: bool = False, estimated: bool = False) -> Usage:
        """The usage of a single call; `cost_usd` None means no price was known, `estimated`
        that the tokens are litellm's count, not the provider's."""
        return cls(tokens_in, tokens_out, cache_read, cache_write, reasoning, cost_usd or 0.0,
                   int(cost_usd is None), 1, int(failed), (tokens_in + tokens_out) * estimated)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """A Usage from its `as_dict` form; unknown keys are ignored, missing ones are zero."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    def as_dict(self) -> dict[str, int | float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def tokens(self) -> int:
        """Input plus output tokens: what the run's token cap counts."""
        return self.tokens_in + self.tokens_out

    @property
    def uncached_in(self) -> int:
        """Input tokens billed at the full input price."""
        return max(0, self.tokens_in - self.cache_read - self.cache_write)

    @property
    def cost_usd(self) -> float | None:
        """Total cost in USD, or None when unknown (some call had no price)."""
        return self.known_cost_usd if self.unpriced_calls == 0 else None

    @property
    def cache_share(self) -> float:
        """The share of input tokens read from the provider's cache (0 when there was no input)."""
        return self.cache_read / self.tokens_in if self.tokens_in else 0.0

    def trailer(self) -> str:
        """The tokens of a commit record (`commitmeta.ContributionRecord.tokens`): `in=… out=…`, then the
        cache and reasoning parts."""
        parts = [f"in={self.tokens_in}", f"out={self.tokens_out}"]
        parts += [f"{name}={value}" for name, value in
                  (("cache_read", self.cache_read), ("cache_write", self.cache_write),
                   ("reasoning", self.reasoning)) if value]
        return " ".join(parts)

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))
