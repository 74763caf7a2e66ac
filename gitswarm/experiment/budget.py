"""The budget an experiment holds equal across its arms: episodes per run, tokens per run, or
the fair one, equal tokens: every arm runs N episodes (pass 1), then in each seed every arm
that spent more than the cheapest is run again, in a run of its own, under a cap of what the
cheapest spent (pass 2). Both passes are ordinary runs; nothing spent is hidden."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitswarm.experiment.figures import BROKEN, FINISHED, RunFigures

UNBOUND = 1_000_000
"""The episode budget and cap of a run under a token budget: never reached first."""
SMALLEST = "smallest"
"""`tokens = "smallest"`: the tokens of each seed's cheapest arm."""


@dataclass(frozen=True)
class Budget:
    """The budget every arm's run gets: `episodes` of any outcome, or `tokens` (in + out), or
    `episodes` with `smallest`: equal tokens, those of each seed's cheapest arm."""

    episodes: int | None = None
    tokens: int | None = None
    smallest: bool = False

    def settings(self) -> dict[str, int]:
        """The run settings that hold it (in pass 1, for the smallest)."""
        if self.tokens is not None:
            return {"max_total_tokens": self.tokens, "budget": UNBOUND, "max_episodes": UNBOUND}
        return {"budget": self.episodes or 1, "max_episodes": self.episodes or 1}

    def describe(self) -> str:
        """What it means, in one sentence."""
        overshoot = ("a run stops before a call once its tokens reach the cap, and the calls already in flight "
                     "finish, so it passes the cap by at most one call per worker (and the merger's)")
        if self.smallest:
            return (f"equal tokens, those of the cheapest arm: every arm runs {self.episodes} episodes of any "
                    "outcome (pass 1), then in each seed every arm that spent more tokens than the seed's "
                    f"cheapest arm (T) runs again in a run of its own under a cap of T tokens, {self.episodes} "
                    "episodes still the bound (pass 2), and that run stands for it; "
                    f"{overshoot}")
        if self.tokens is not None:
            return f"{self.tokens} tokens per run: {overshoot} (within one episode's spend with one worker)"
        return f"{self.episodes} episodes per run, of any outcome"


@dataclass(frozen=True)
class EqualSpend:
    """One seed's equal tokens, once every arm finished pass 1."""

    seed: int
    tokens: int
    """T: the smallest total tokens (every call, the merger's too) among the seed's pass-1 runs."""
    smallest: str
    """The arm that spent T; its pass-1 run stands as its own equal-spend run."""
    again: tuple[str, ...]
    """The arms that spent more than T: each gets a pass-2 run under a cap of T."""

    def as_dict(self) -> dict:
        return {"seed": self.seed, "tokens": self.tokens, "smallest": self.smallest, "again": list(self.again)}


def equal_spend(seed: int, firsts: Sequence[RunFigures]) -> EqualSpend | None:
    """The seed's T from its pass-1 runs' figures (one per arm, in the spec's order); None while
    one is not finished, or ended by the provider or gitswarm (its spend measures that failure)."""
    if not firsts or any(f.state != FINISHED or f.reason in BROKEN for f in firsts):
        return None
    low = min(f.tokens for f in firsts)
    smallest = next(f.arm for f in firsts if f.tokens == low)
    return EqualSpend(seed, low, smallest, tuple(f.arm for f in firsts if f.tokens > low))
