"""The personalities `serve(..., personality=...)` and `--personality` accept, by name."""

from __future__ import annotations

from gitswarm.fakeserver.anthropic import AnthropicPersonality
from gitswarm.fakeserver.llamacpp import LlamaCppPersonality
from gitswarm.fakeserver.openai_rules import LocalNoToolsPersonality, ReasoningPersonality
from gitswarm.fakeserver.personality import Personality, Settings

PERSONALITIES: dict[str, type[Personality]] = {
    "openai": Personality,
    "anthropic": AnthropicPersonality,
    "openai-reasoning": ReasoningPersonality,
    "local-no-tools": LocalNoToolsPersonality,
    "llama-cpp": LlamaCppPersonality,
}
"""Each personality by name: the provider the fake server plays."""


def personality(name: str, settings: Settings) -> Personality:
    """A new personality of this name (its caches and signing key belong to one server)."""
    if name not in PERSONALITIES:
        raise ValueError(f"unknown personality {name!r}; known: {', '.join(PERSONALITIES)}")
    return PERSONALITIES[name](settings)
