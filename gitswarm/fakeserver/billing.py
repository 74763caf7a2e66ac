"""What the fake server billed: the token parts of each reply, priced with the fake's own table."""

from __future__ import annotations

from dataclasses import dataclass

from gitswarm.fakeserver.catalog import ModelSpec

MILLION = 1_000_000


@dataclass(frozen=True)
class Usage:
    """The billable token parts of one reply, as the provider reported them."""

    input_tokens: int
    """Input tokens billed at the full input price (cached parts excluded)."""
    output_tokens: int
    """Output tokens, thinking and hidden reasoning included."""
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0
    """The part of output_tokens that was hidden reasoning (informational; already in output)."""

    @property
    def prompt_tokens(self) -> int:
        """Every input token, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_5m_tokens + self.cache_write_1h_tokens


@dataclass(frozen=True)
class Charge:
    """One billed reply: which request, which model, its usage and its price."""

    index: int
    model: str
    usage: Usage
    usd: float
    priced: bool
    """False when the model is not in the fake's price table (billed at 0)."""


def price(usage: Usage, spec: ModelSpec) -> float:
    """USD for `usage` at the spec's per-million prices."""
    total = (usage.input_tokens * spec.input_usd + usage.output_tokens * spec.output_usd
             + usage.cache_read_tokens * spec.cached_input_usd
             + usage.cache_write_5m_tokens * spec.cache_write_5m_usd
             + usage.cache_write_1h_tokens * spec.cache_write_1h_usd)
    return total / MILLION


def charge(index: int, model: str, usage: Usage, spec: ModelSpec) -> Charge:
    """The charge of one reply."""
    return Charge(index, model, usage, price(usage, spec), spec.priced)
