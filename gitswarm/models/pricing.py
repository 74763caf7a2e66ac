"""What a call cost: the user's prices when given (cached input priced apart), else litellm's
price for the model, which knows each provider's cache-read and cache-write rates."""

from __future__ import annotations

from typing import Any

from gitswarm.models.config import ModelConfig
from gitswarm.models.lib import litellm_module


class Pricer:
    """Prices the calls to one model; remembers the models litellm cannot price (each failed
    lookup scans its whole map) or prices at 0 (a local model: pricing it again, every call,
    cost about a millisecond)."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._unpriced: set[str] = set()

    def cost(self, response: Any, parts: dict[str, int]) -> float | None:
        """USD of one reply with these usage parts; None when no price is known."""
        if self.config.user_priced:
            return self.user_cost(parts)
        stamped = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if stamped:  # litellm prices every non-streamed reply it returns; pricing it again cost ~0.5 ms
            return float(stamped)
        served_by = str(getattr(response, "model", "") or self.config.model)
        if served_by in self._unpriced:
            return None
        try:
            cost = litellm_module().completion_cost(completion_response=response, model=self.config.model)
        except Exception:  # litellm raises assorted types for a model it cannot price: cost unknown
            self._unpriced.add(served_by)
            return None
        if cost > 0:
            return cost
        if parts.get("tokens_in", 0) > 0 and parts.get("tokens_out", 0) > 0:
            self._unpriced.add(served_by)  # litellm's fallback rules price an unmapped model at 0: it always will
        return None

    def user_cost(self, parts: dict[str, int]) -> float:
        """The user's prices per million tokens; cache reads and writes at their own price when
        given, else at the input price (never less than the provider could bill)."""
        c = self.config
        price_in = c.price_in_per_mtok or 0.0
        cached = price_in if c.price_cached_in_per_mtok is None else c.price_cached_in_per_mtok
        written = price_in if c.price_cache_write_per_mtok is None else c.price_cache_write_per_mtok
        read, write = parts.get("cache_read", 0), parts.get("cache_write", 0)
        uncached = max(0, parts.get("tokens_in", 0) - read - write)
        total = (uncached * price_in + read * cached + write * written
                 + parts.get("tokens_out", 0) * (c.price_out_per_mtok or 0.0))
        return total / 1e6
