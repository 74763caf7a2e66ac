"""What an episode knows of the run's settings (`Terms`), fixed as the scheduler plans it
(`engine.plan.terms`): its limits, what its prompts tell of the run's rule and caps, the size of
its overview, how its conversation is trimmed. The episode loop, its prompts and its tools read
these on its plan (`EpisodePlan.terms`), never the run's settings, which are the run's owners'
(`Shared.settings`: the scheduler, the merger, the coordinator)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitswarm.domain.rule import Rule
from gitswarm.engine.window import Trimming


@dataclass(frozen=True)
class Terms:
    """The run's settings as one episode knows them."""

    max_steps: int
    """Its model calls at most (`SolveConfig.steps` of its problem's kind)."""
    timeout_s: float
    """Its wall-clock limit."""
    workers: int
    """The run's slots in this process (C): its state block counts the workers per open problem
    as the scheduler does."""
    budget: int
    """The run's charged episodes at most."""
    max_episodes: int
    """The run's episodes of any outcome at most."""
    max_usd: float | None
    max_total_tokens: int | None
    rule: Rule
    """The run's selection rule, which its prompts state."""
    context_tokens: int
    """The size of its first prompt's overview, in tokens."""
    shown: tuple[int, int]
    """The items its overview shows for being the most cited, and the newest."""
    own_reviewer: bool
    """The run's review episodes run on a model of their own (the prompts say so)."""
    blind_reviews: bool
    """The run's assigned reviews are blind (a free worker's prompt says so)."""
    trimming: Trimming
    """How its conversation is kept bounded (`window.ContextPolicy`)."""
    problems: Path
    """The problem-set folder, whose hidden parts no program of the episode may see."""
