"""What we know of a model before and after calling it: its output limit, whether it has
function calling, whether it reasons; and what a provider's refusal says about it."""

from __future__ import annotations

import re

from gitswarm.models.lib import litellm_module

_STATED_LIMIT = (
    # Anthropic: "max_tokens: 128000 > 32000, which is the maximum allowed number of output tokens for ..."
    re.compile(r"max_tokens:\s*\d+\s*>\s*(\d+), which is the maximum allowed", re.IGNORECASE),
    # OpenAI: "max_tokens is too large: 200000. This model supports at most 16384 completion tokens"
    re.compile(r"supports at most (\d+) completion tokens", re.IGNORECASE),
    # Gemini / Vertex: "The maximum number of output tokens ... is 65536" / "max_output_tokens ... must be <= 8192"
    re.compile(r"maximum (?:number of )?output tokens[^0-9]{0,60}?(?:is|of|:)\s*(\d+)", re.IGNORECASE),
    re.compile(r"max_(?:output_|completion_)?tokens[^0-9]{0,40}?(?:<=|less than or equal to|at most)\s*(\d+)",
               re.IGNORECASE),
)
_REFUSES_TOOLS = re.compile(
    r"does not support tools|tools? (?:are|is) not supported|tool(?: use| calling| calls)? (?:is )?not supported"
    r"|\"auto\" tool choice requires|does not support (?:function|tool) call|unsupported parameter.{0,20}tools",
    re.IGNORECASE)


def model_info(model: str) -> dict | None:
    """litellm's record of the model, or None for a model its map does not have."""
    try:
        return dict(litellm_module().get_model_info(model))
    except Exception:  # litellm raises assorted types for an unmapped model
        return None


def known_output_limit(model: str) -> int | None:
    """The most tokens one reply may have, when litellm knows it."""
    info = model_info(model) or {}
    limit = info.get("max_output_tokens") or info.get("max_tokens")
    return int(limit) if isinstance(limit, int | float) and limit > 0 else None


def known_context_window(model: str) -> int | None:
    """The most input tokens one request may have, when litellm knows it."""
    info = model_info(model) or {}
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if isinstance(window, int | float) and window > 0 else None


def has_native_tools(model: str) -> bool | None:
    """True or False when litellm knows whether the model has function calling; None when the
    model is not in its map (a local or brand-new model: try native, fall back on refusal)."""
    info = model_info(model)
    if info is None:
        return None
    return bool(info.get("supports_function_calling"))


def stated_output_limit(message: str) -> int | None:
    """The output limit a provider's 400 states, e.g. Anthropic's "... > 32000, which is the
    maximum allowed number of output tokens"; None when it states none."""
    for pattern in _STATED_LIMIT:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def refuses_tools(message: str) -> bool:
    """The provider's 400 says the model cannot take `tools` (Ollama, vLLM, llama.cpp wordings)."""
    return bool(_REFUSES_TOOLS.search(message))


_STREAMED_TOOLS = re.compile(r"stream\w*\s+tool|tool\w*\s+.*stream\w*.*not supported|Error code: 5\d\d\s*$",
                             re.IGNORECASE)


def refuses_streamed_tools(message: str) -> bool:
    """A 5xx that a server gives a streamed request with `tools` it can only answer unstreamed:
    llama-cpp-python's "Automatic streaming tool choice is not supported", or its functionary
    format's wordless 500 (an assert)."""
    return bool(_STREAMED_TOOLS.search(message.strip()))
