"""The arguments of one `litellm.acompletion` call, following each provider's rules: an output
limit always, reasoning as litellm maps it, no temperature where a reasoning mode forbids it,
cache breakpoints where the provider uses them, usage asked for in streams."""

from __future__ import annotations

import functools
from typing import Any

from gitswarm.errors import BadInput
from gitswarm.models.config import ModelConfig
from gitswarm.models.lib import litellm_module

CACHE_POINTS = (
    {"location": "message", "role": "system"},  # tools and the system prompt: the same for every worker
    {"location": "message", "index": 1},  # the episode's first prompt: statement and memory overview
    {"location": "message", "index": -2},  # all but the newest state block, which the next step replaces
    {"location": "message", "index": -1},  # the conversation so far, read back at the next step
)
"""Where litellm puts `cache_control` breakpoints (Anthropic allows four). The next request
changes the newest state block to a line (`engine.window`), so the prefix before it is marked
too."""


def completion_args(config: ModelConfig, messages: list[dict], tools: list[dict] | None, *,
                    output_limit: int, tool_choice: str | None, api_key: str | None) -> dict[str, Any]:
    """Keyword arguments for `litellm.acompletion`."""
    args: dict[str, Any] = {"model": config.model, "messages": messages, "max_tokens": output_limit,
                            "timeout": read_timeout(config), "num_retries": 0}
    if config.api_base:
        args["api_base"] = config.api_base
    if api_key:
        args["api_key"] = api_key
    if tools:
        args["tools"] = tools
        if tool_choice or config.api_base:
            # OpenAI's default with tools is "auto", but not every self-hosted server's:
            # llama-cpp-python's chatml-function-calling leaves the tools out of the prompt
            # unless the request says "auto".
            args["tool_choice"] = tool_choice or "auto"
    if config.reasoning_effort:
        args["reasoning_effort"] = config.reasoning_effort
    if config.temperature is not None and may_set_temperature(config):
        args["temperature"] = config.temperature
    if config.stream:
        args["stream"] = True
        args["stream_options"] = {"include_usage": True}  # OpenAI-style servers send usage only when asked
    if config.cache_prompts and uses_cache_breakpoints(config.model):
        args["cache_control_injection_points"] = [dict(p) for p in CACHE_POINTS if _exists(p, messages)]
    return args


def check_thinking_room(config: ModelConfig, output_limit: int) -> None:
    """Anthropic's thinking budget must be under the reply's limit, and litellm maps the
    effort to a fixed budget (1024, 2048, 4096 tokens) whatever limit it is given: a limit
    at or under the budget would be refused on every call, so it is refused here, once."""
    if not config.reasoning_effort or not keeps_stream_alive(config.model):
        return
    from litellm import constants  # loaded by litellm_module already

    budget = getattr(constants, f"DEFAULT_REASONING_EFFORT_{config.reasoning_effort.upper()}_THINKING_BUDGET", 0)
    if output_limit <= budget:
        raise BadInput(f"reasoning effort {config.reasoning_effort} gives {config.model} a thinking budget of "
                         f"{budget} tokens, which must be less than the output limit ({output_limit}): raise "
                         f"--max-output-tokens above {budget} or choose a lower --reasoning-effort")


def read_timeout(config: ModelConfig) -> Any:
    """The transport's timeout. Anthropic's stream never goes quiet while the model works (it
    sends thinking deltas and pings), so there the idle timeout applies to bytes from the
    start; OpenAI's Chat Completions sends nothing while a reasoning model thinks, so there the
    wait for the first chunk is bounded by the reply timeout alone (see stream.collect)."""
    if not (config.stream and keeps_stream_alive(config.model)):
        return config.reply_timeout_s
    import httpx  # loaded by litellm already

    return httpx.Timeout(config.reply_timeout_s, read=config.idle_timeout_s)


@functools.cache
def keeps_stream_alive(model: str) -> bool:
    """The provider sends events on a stream while the model is working (Anthropic's pings)."""
    try:
        provider = litellm_module().get_llm_provider(model)[1]
    except Exception:  # an unroutable model string: litellm's own call will say so
        return False
    return provider == "anthropic"


def may_set_temperature(config: ModelConfig) -> bool:
    """Temperature is sent only without a reasoning mode (Anthropic's thinking allows none but
    1, OpenAI's reasoning models refuse it) and where litellm says the model takes it."""
    if config.reasoning_effort:
        return False
    try:
        supported = litellm_module().get_supported_openai_params(config.model) or []
    except Exception:  # litellm cannot route the model: the provider decides
        return True
    return "temperature" in supported


def may_force_tools(config: ModelConfig) -> bool:
    """A request may force a tool call (`tool_choice`): not with a reasoning mode (Anthropic
    refuses forced tool use while thinking) and only where litellm says the model takes it."""
    if config.reasoning_effort:
        return False
    try:
        supported = litellm_module().get_supported_openai_params(config.model) or []
    except Exception:  # litellm cannot route the model: do not risk a refusal
        return False
    return "tool_choice" in supported


@functools.cache
def uses_cache_breakpoints(model: str) -> bool:
    """The provider caches only what `cache_control` marks (Anthropic's Claude, also on
    Bedrock and Vertex); OpenAI-style providers cache a stable prefix by themselves."""
    litellm = litellm_module()
    try:
        provider = litellm.get_llm_provider(model)[1]
    except Exception:  # an unroutable model string: litellm's own call will say so
        return False
    return provider in ("anthropic", "bedrock", "vertex_ai") and "claude" in model.lower()


def _exists(point: dict, messages: list[dict]) -> bool:
    index = point.get("index")
    if index is None:
        return any(m.get("role") == point.get("role") for m in messages)
    return -len(messages) <= index < len(messages)
