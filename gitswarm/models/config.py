"""How to reach one model: the settings of a model client, each documented."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gitswarm.errors import BadInput

ReasoningEffort = Literal["low", "medium", "high"]
ToolProtocol = Literal["auto", "native", "text"]
DEFAULT_OUTPUT_TOKENS = 16_000
"""The per-reply limit when none is given: room for a long proof, and under the output limit
of the models people run (it is clamped to a smaller known limit)."""


@dataclass(frozen=True)
class ModelConfig:
    """How to reach one model through litellm, and how to talk to it."""

    model: str
    """A litellm model string, e.g. "anthropic/claude-opus-4-8", "openai/gpt-5.5", "ollama/llama3"."""
    api_base: str | None = None
    """Base URL of the server (an OpenAI-compatible local server, a proxy); None: litellm's
    default for the provider, or the provider's usual environment variable."""
    api_key: str | None = None
    """API key; None: the provider's usual environment variable (e.g. ANTHROPIC_API_KEY)."""
    max_output_tokens: int | None = None
    """Cap on the tokens of one reply, thinking included; None: DEFAULT_OUTPUT_TOKENS. Always
    sent, clamped to the model's limit when litellm knows it."""
    reasoning_effort: ReasoningEffort | None = None
    """Turn the model's reasoning mode on at this effort (Anthropic thinking, OpenAI reasoning
    models, Gemini thinking), as litellm maps it; None: the model's default."""
    temperature: float | None = None
    """Sampling temperature; None: the provider's default. Never sent with a reasoning mode
    that forbids it."""
    tool_protocol: ToolProtocol = "auto"
    """How tools are offered: `native` function calling, the `text` protocol for models
    without it, or `auto`: text when litellm says the model has no function calling, or after
    the server refuses `tools`."""
    stream: bool = True
    """Stream replies, so a long reply is not cut by a timeout while it is still arriving."""
    idle_timeout_s: float = 300.0
    """A streamed reply that sends nothing for this long is cut and counts as a timeout."""
    reply_timeout_s: float = 1800.0
    """The longest one reply may take in all (a reasoning model may think for 15 minutes)."""
    timeout_retries: int = 1
    """Attempts after a timeout: each is a whole new generation, billed again."""
    max_retries: int = 4
    """Attempts after the first one for rate limits, server and connection errors."""
    cache_prompts: bool = True
    """Mark the stable prefix of each request with `cache_control` breakpoints for providers
    that use them (Anthropic); OpenAI-style providers cache a stable prefix by themselves."""
    price_in_per_mtok: float | None = None
    """USD per million input tokens. Given with price_out_per_mtok, it is used instead of
    litellm's price; needed for models litellm has no price for."""
    price_out_per_mtok: float | None = None
    """USD per million output tokens (see price_in_per_mtok)."""
    price_cached_in_per_mtok: float | None = None
    """USD per million input tokens read from the provider's cache; None: the input price."""
    price_cache_write_per_mtok: float | None = None
    """USD per million input tokens written to the provider's cache; None: the input price."""
    backoff_base_s: float = 1.0
    """First retry delay before jitter; it doubles with each attempt."""
    backoff_cap_s: float = 30.0
    """Longest delay between attempts, also the bound on a server's Retry-After."""
    max_concurrent_calls: int | None = None
    """Requests in flight at once through this client; None: no bound. A server that answers
    one request at a time (llama-cpp-python's) queues the rest, and the wait in its queue would
    count against the reply timeout; bounded here, a call's timeout starts when its turn comes."""

    def __post_init__(self) -> None:
        if (self.price_in_per_mtok is None) != (self.price_out_per_mtok is None):
            raise BadInput("give both the input and the output price per million tokens, or neither")
        if self.price_in_per_mtok is None and (self.price_cached_in_per_mtok is not None
                                               or self.price_cache_write_per_mtok is not None):
            raise BadInput("a cached-input price needs the input and output prices too")
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise BadInput("the output limit must be at least 1 token")
        if self.max_concurrent_calls is not None and self.max_concurrent_calls < 1:
            raise BadInput("at least 1 concurrent call, or no bound")

    @property
    def user_priced(self) -> bool:
        """The user gave prices for this model."""
        return self.price_in_per_mtok is not None
