"""The settings of one run (and of grading it); the CLI merges file, environment and flags
into these models (gitswarm.engine.settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from gitswarm.core.rule import SETTLE_NOMINATIONS, VERIFY, Rule
from gitswarm.errors import BadInput
from gitswarm.models.config import ReasoningEffort, ToolProtocol

Isolation = Literal["shared", "independent"]
"""What an episode sees of the memory (`SolveConfig.isolation`)."""

EPISODES_PER_CHARGE = 3
"""The episode cap's default: this many episodes, of any outcome, per budgeted one."""


class SolveConfig(BaseModel):
    """Everything `gitswarm solve` needs to know; every field is a CLI option too."""

    model_config = {"frozen": True, "extra": "forbid"}

    problems: Path
    """The problem-set folder."""
    run: Path
    """The run repository (created, or resumed when it exists)."""
    model: str
    """litellm model string for workers, e.g. `anthropic/claude-opus-4-8`."""
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
    max_episodes: int | None = Field(None, ge=1)
    """Episodes of any outcome (charged, abstained, failed) at most, over the run and its
    resumes; None: three times the budget."""
    no_progress: int = Field(4, ge=1)
    """A problem whose last this many episodes all abstained or failed is set aside: no more
    episodes are started on it; the run stops once every open problem is set aside."""
    max_usd: float | None = Field(None, ge=0)
    """Stop before a call once this much money is spent, failed calls included (needs known prices)."""
    max_total_tokens: int | None = Field(None, ge=1)
    """Stop before a call once the run's calls, failed ones included, spent this many tokens (in + out)."""
    time_limit_s: float | None = Field(None, ge=0)
    """The run's wall time, in seconds of this start: past it no episode starts, and the
    episodes in flight get `stop_grace_s` to finish before they are cut short."""
    stop_grace_s: float = Field(20.0, ge=0)
    """Seconds the episodes in flight get to finish once the time limit is reached or SIGTERM
    arrives; then each is cut short, recorded `stopped` (uncharged) with its transcript, its
    spending and its staged files, and the next run works on its problem again."""
    problem_ids: tuple[str, ...] = ()
    """Work only on these problems (default: all)."""
    seed: int = 0
    """Seed of the scheduler's random choices."""
    max_steps: int = Field(12, ge=2)
    """Model calls per episode at most."""
    episode_timeout_s: float = Field(3 * 3600.0, gt=0)
    """Wall-clock limit of one episode: room for a reasoning model that thinks 15 minutes a reply."""
    max_output_tokens: int | None = Field(None, ge=1)
    """Tokens of one reply at most, thinking included; None: the model client's default."""
    reasoning_effort: ReasoningEffort | None = None
    """The workers' reasoning mode: low, medium or high; None: the model's default."""
    merger_reasoning_effort: ReasoningEffort | None = None
    """The merger's reasoning mode; None: the merger model's default."""
    tool_protocol: ToolProtocol = "auto"
    """How tools are offered: native function calling, a text protocol, or auto (text for a
    model without function calling)."""
    idle_timeout_s: float = Field(300.0, gt=0)
    """A streamed reply that sends nothing for this long is cut and counts as a timeout."""
    reply_timeout_s: float = Field(1800.0, gt=0)
    """The longest one reply may take in all."""
    max_concurrent_calls: int | None = Field(None, ge=1)
    """Model calls in flight at once, the workers' and the merger's together; None: no bound.
    For a server that answers one request at a time: each call's reply timeout starts when its
    turn comes, not while it waits in the server's queue."""
    context_tokens: int = 6000
    """Hard cap, in tokens, of the memory overview in an episode's first prompt."""
    overview_cited: int = Field(8, ge=0)
    """Items the overview shows for being the most cited (the rest: list_items, search)."""
    overview_newest: int = Field(8, ge=0)
    """Items the overview shows besides: the newest (more of them when fewer are cited)."""
    settle_nominations: int = Field(SETTLE_NOMINATIONS, ge=1)
    """Nominations that settle a problem where several candidates are verified (or with `verify`
    0): its leader settles it once it has this many. A verified candidate with no verified
    rival settles its problem without any."""
    verify: int = Field(VERIFY, ge=0)
    """K: a candidate is verified by K `pass` reviews from distinct workers other than its
    author and no `critical` review; only a verified candidate is selected as verified, and
    only one settles a problem. 0: plain plurality of nominations, no review needed."""
    isolation: Isolation = "shared"
    """How much of the memory an episode sees. `shared`: the swarm, every contribution on main.
    `independent`: only its problem's statement, as independent sampling does (no overview,
    no other episode's items, searches or announcements); its episodes write attempts, notes
    and code but cannot review or nominate, so `verify` does not apply, and each answer
    problem's solution is the attempt whose final answer most attempts agree on
    (self-consistency). The baseline `gitswarm experiment` compares the swarm with."""
    unconfined: bool = False
    """Run the programs of code problems (program, reproduce) even where this machine cannot make
    a sandbox's root (no bubblewrap, no usable namespaces): they then run with resource limits
    and a fresh uid only, seeing the host's files. Off: such a run is refused at its start.
    Named in the event log (`run_started`), `status` and the report."""
    summary_every: int = 5
    """The merger rewrites a problem's SUMMARY.md at most once per this many merges."""
    price_in_per_mtok: float | None = Field(None, ge=0)
    """USD per million input tokens, for models litellm has no price for."""
    price_out_per_mtok: float | None = Field(None, ge=0)
    """USD per million output tokens, for models litellm has no price for."""
    price_cached_in_per_mtok: float | None = Field(None, ge=0)
    """USD per million input tokens read from the provider's cache (default: the input price)."""
    price_cache_write_per_mtok: float | None = Field(None, ge=0)
    """USD per million input tokens written to the provider's cache (default: the input price)."""

    @model_validator(mode="before")
    @classmethod
    def _episode_cap(cls, data: object) -> object:
        """No episode cap given: three times the budget."""
        if isinstance(data, dict) and data.get("max_episodes") is None:
            budget = data.get("budget", cls.model_fields["budget"].default)
            if isinstance(budget, int) and not isinstance(budget, bool):
                data = {**data, "max_episodes": max(1, EPISODES_PER_CHARGE * budget)}
        return data

    @model_validator(mode="after")
    def _reviewers(self) -> SolveConfig:
        """K passes from workers other than the author need K + 1 workers: with fewer, no
        attempt could ever be verified, and no problem settle."""
        needed = Rule.of(self).workers_needed
        if self.workers < needed and self.isolation == "shared":
            raise BadInput(f"verify={self.verify} needs at least {needed} workers (a review counts "
                             f"only from a worker other than the attempt's author), not {self.workers}: give "
                             f"--workers {needed} or more, or a smaller --verify (0: no review needed)")
        return self

    @property
    def merger(self) -> str:
        return self.merger_model or self.model

class GradeConfig(BaseModel):
    """The referee's settings for `gitswarm grade`: the config file's [grade] table, then flags."""

    model_config = {"frozen": True, "extra": "forbid"}

    referee_model: str | None = None
    """litellm model string of the referee (needed for proof problems)."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server for the referee model."""
    reasoning_effort: ReasoningEffort | None = None
    """The referee's reasoning mode: low, medium or high; None: the model's default."""
