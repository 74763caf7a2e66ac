"""The settings of one run; the CLI merges file, environment and flags into this one model."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class SolveConfig(BaseModel):
    """Everything `gitswarm solve` needs to know; every field is a CLI option too."""

    model_config = {"frozen": True}

    problems: Path
    """The problem-set folder."""
    run: Path
    """The run repository (created, or resumed when it exists)."""
    model: str
    """litellm model string for workers, e.g. `anthropic/claude-opus-4`."""
    merger_model: str | None = None
    """Model for the merger's conflict resolution and summaries (default: `model`)."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible or self-hosted server (default: the provider's)."""
    api_key: str | None = None
    """API key; normally taken from the provider's usual environment variable instead."""
    workers: int = Field(4, ge=1, le=1024)
    """Concurrency C: episodes in flight at once."""
    budget: int = Field(40, ge=1)
    """Budget B: charged episodes (contributions and nominations; abstaining is free)."""
    max_usd: float | None = Field(None, ge=0)
    """Stop before a call once this much money is spent (needs known prices)."""
    max_tokens: int | None = Field(None, ge=1)
    """Stop before a call once this many tokens (in + out) are spent."""
    time_limit_s: float | None = Field(None, ge=0)
    """Stop scheduling new episodes after this many seconds."""
    problem_ids: tuple[str, ...] = ()
    """Work only on these problems (default: all)."""
    seed: int = 0
    """Seed of the scheduler's random choices."""
    max_steps: int = Field(12, ge=2)
    """Model calls per episode at most."""
    episode_timeout_s: float = 900.0
    """Wall-clock limit of one episode."""
    call_timeout_s: float = 180.0
    """Timeout of one model call."""
    context_tokens: int = 6000
    """Hard cap, in tokens, of the memory overview in an episode's first prompt."""
    overview_cited: int = Field(8, ge=0)
    """Items the overview shows for being the most cited (the rest: list_items, search)."""
    overview_newest: int = Field(8, ge=0)
    """Items the overview shows besides: the newest (more of them when fewer are cited)."""
    settle_nominations: int = 3
    """A problem is settled once one candidate has this many nominations."""
    summary_every: int = 5
    """The merger rewrites a problem's SUMMARY.md at most once per this many merges."""
    price_in_per_mtok: float | None = Field(None, ge=0)
    """USD per million input tokens, for models litellm has no price for."""
    price_out_per_mtok: float | None = Field(None, ge=0)
    """USD per million output tokens, for models litellm has no price for."""

    @property
    def merger(self) -> str:
        return self.merger_model or self.model
