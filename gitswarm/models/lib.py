"""litellm itself: imported once, on the first call (it takes seconds), offline."""

from __future__ import annotations

import functools
import logging
import os
from types import ModuleType


@functools.cache
def litellm_module() -> ModuleType:
    """Import litellm once: local price map, no fetches of its own, no banners or chatter."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False  # older litellm versions only; a no-op attribute on newer ones
    # Nothing more: no setting of litellm's trims its CPU per call. Its callback lists are empty
    # already, and the switches that sound like it (disable_streaming_logging, logging, no-log,
    # disable_end_user_cost_tracking, ...) measure at no gain; the cost is its stream handling
    # (docs/benchmarks.md, "What litellm costs per call"; scripts/bench_litellm.py).
    if "LITELLM_LOG" not in os.environ:  # the user asked for litellm's logs: keep them
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logging.getLogger(name).setLevel(logging.ERROR)
    return litellm


def configured_base(model: str, api_base: str | None) -> str | None:
    """`api_base`, or the base URL the provider's usual variable sets (OPENAI_API_BASE, ...)."""
    litellm = litellm_module()
    try:
        provider = litellm.get_llm_provider(model)[1].upper()
    except litellm.exceptions.BadRequestError:
        return api_base
    return api_base or os.environ.get(f"{provider}_API_BASE") or os.environ.get(f"{provider}_BASE_URL")
