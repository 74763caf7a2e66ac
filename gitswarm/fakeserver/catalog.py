"""What the fake knows about real models: output limits, cache minimums and published prices.

Prices are USD per million tokens as the providers publish them (Anthropic's pricing page:
5-minute cache writes at 1.25x the input price, 1-hour writes at 2x, cache reads at 0.1x;
OpenAI's pricing page: a cached-input price per model). The fake bills with these tables,
never with litellm's, so its bill is an independent figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

DEFAULT_OUTPUT_LIMIT = 8192
"""The output limit of a model the tables do not know."""

T = TypeVar("T")
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)")


@dataclass(frozen=True)
class ModelSpec:
    """One model's limits and prices (USD per million tokens)."""

    output_limit: int
    input_usd: float = 0.0
    output_usd: float = 0.0
    cached_input_usd: float = 0.0
    cache_write_5m_usd: float = 0.0
    cache_write_1h_usd: float = 0.0
    min_cache_tokens: int = 1024
    """The shortest prefix a cache breakpoint caches (Anthropic's minimum cacheable length)."""
    efforts: tuple[str, ...] = ("low", "medium", "high")
    """The `reasoning_effort` values an OpenAI reasoning model accepts."""
    priced: bool = True


def claude(output_limit: int, input_usd: float, output_usd: float, min_cache: int = 1024) -> ModelSpec:
    """A Claude model priced the documented way: cache writes 1.25x (5m) or 2x (1h), reads 0.1x."""
    return ModelSpec(output_limit, input_usd, output_usd, input_usd * 0.1, input_usd * 1.25, input_usd * 2,
                     min_cache)


def openai(output_limit: int, input_usd: float, output_usd: float, cached_usd: float,
           efforts: tuple[str, ...] = ("low", "medium", "high")) -> ModelSpec:
    """An OpenAI model: input, output and cached-input prices."""
    return ModelSpec(output_limit, input_usd, output_usd, cached_usd, efforts=efforts)


GPT5_EFFORTS = ("minimal", "low", "medium", "high")
ALL_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
"""Every reasoning_effort value OpenAI has documented for some model."""

ANTHROPIC: Mapping[str, ModelSpec] = {
    "claude-opus-4-5": claude(64_000, 5.0, 25.0, min_cache=4096),
    "claude-opus-4-1": claude(32_000, 15.0, 75.0),
    "claude-opus-4": claude(32_000, 15.0, 75.0),
    "claude-opus-4-0": claude(32_000, 15.0, 75.0),
    "claude-sonnet-4-5": claude(64_000, 3.0, 15.0),
    "claude-sonnet-4": claude(64_000, 3.0, 15.0),
    "claude-sonnet-4-0": claude(64_000, 3.0, 15.0),
    "claude-3-7-sonnet": claude(64_000, 3.0, 15.0),
    "claude-haiku-4-5": claude(64_000, 1.0, 5.0, min_cache=4096),
    "claude-3-5-haiku": claude(8_192, 0.8, 4.0, min_cache=2048),
}
"""Claude models by name (a dated snapshot such as claude-opus-4-20250514 resolves to its alias)."""

OPENAI: Mapping[str, ModelSpec] = {
    "o1": openai(100_000, 15.0, 60.0, 7.5),
    "o3": openai(100_000, 2.0, 8.0, 0.5),
    "o3-mini": openai(100_000, 1.1, 4.4, 0.55),
    "o4-mini": openai(100_000, 1.1, 4.4, 0.275),
    "gpt-5": openai(128_000, 1.25, 10.0, 0.125, GPT5_EFFORTS),
    "gpt-5-mini": openai(128_000, 0.25, 2.0, 0.025, GPT5_EFFORTS),
    "gpt-5-nano": openai(128_000, 0.05, 0.4, 0.005, GPT5_EFFORTS),
    "gpt-4.1": openai(32_768, 2.0, 8.0, 0.5),
    "gpt-4o": openai(16_384, 2.5, 10.0, 1.25),
    "gpt-4o-mini": openai(16_384, 0.15, 0.6, 0.075),
}
"""OpenAI models by name (a dated snapshot such as o3-2025-04-16 resolves to its alias)."""


class Catalog:
    """Looks models up in one provider's table, with per-server output-limit overrides."""

    def __init__(self, table: Mapping[str, ModelSpec], output_limits: Mapping[str, int] | None = None,
                 default_output_limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        self.table = table
        self.output_limits = dict(output_limits or {})
        self.default_output_limit = default_output_limit

    def spec(self, model: str) -> ModelSpec:
        """The model's spec; an unknown model gets the default limit and no price."""
        spec = _lookup(self.table, model) or ModelSpec(self.default_output_limit, priced=False)
        limit = _lookup(self.output_limits, model)
        return spec if limit is None else replace(spec, output_limit=limit)


def _lookup(table: Mapping[str, T], model: str) -> T | None:
    if model in table:
        return table[model]
    for name in sorted(table, key=len, reverse=True):
        if model.startswith(name) and _SNAPSHOT.fullmatch(model[len(name):]):
            return table[name]
    return None
