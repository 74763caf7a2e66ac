"""Paired comparison of an arm with the baseline: the mean difference in score over (problem,
seed) pairs, with a seeded percentile-bootstrap 95% confidence interval, in pure Python."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RESAMPLES = 2000
LEVEL = 0.95
Pair = tuple[str, int]
"""(problem, seed)."""


def bootstrap_ci(diffs: Sequence[float], resamples: int = RESAMPLES, seed: int = 0,
                 level: float = LEVEL) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean of `diffs`: resample the pairs with
    replacement `resamples` times (seeded, so a report is the same every time)."""
    if not diffs:
        raise ValueError("no differences to resample")
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)]
    return low, high


@dataclass(frozen=True)
class Comparison:
    """An arm against the baseline over the pairs both graded."""

    arm: str
    baseline: str
    pairs: int
    """(problem, seed) pairs with a graded score in both arms: what the interval rests on."""
    mean: float | None
    """Mean of arm − baseline over the pairs; None without pairs."""
    low: float | None
    high: float | None
    only_arm: int
    """Pairs the arm solved and the baseline did not."""
    only_baseline: int
    """Pairs the baseline solved and the arm did not."""
    left_out: int
    """Pairs left out: a run not finished, or a score not graded, on either side."""

    @property
    def within_noise(self) -> bool:
        """The interval contains 0 (or there is nothing to compare)."""
        return self.low is None or self.high is None or self.low <= 0 <= self.high

    def sentence(self) -> str:
        """The comparison in plain words, saying when it is within the noise."""
        if self.mean is None:
            return f"{self.arm} against {self.baseline}: no (problem, seed) pair graded in both, nothing to compare."
        figures = (f"mean difference in score {self.mean:+.3f}, 95% CI [{self.low:+.3f}, {self.high:+.3f}], "
                   f"over {self.pairs} (problem, seed) pair{'s' if self.pairs != 1 else ''}")
        if self.within_noise:
            return (f"{self.arm} against {self.baseline}: {figures}: the difference is within the noise "
                    "(the interval contains 0).")
        better = "higher" if self.mean > 0 else "lower"
        return f"{self.arm} scores {better} than {self.baseline}: {figures}; the interval excludes 0."

    def as_dict(self) -> dict:
        return {"arm": self.arm, "baseline": self.baseline, "pairs": self.pairs, "mean_difference": self.mean,
                "ci95": [self.low, self.high] if self.low is not None else None,
                "within_noise": self.within_noise, "solved_only_by_arm": self.only_arm,
                "solved_only_by_baseline": self.only_baseline, "pairs_left_out": self.left_out,
                "sentence": self.sentence()}


def compare(arm: str, baseline: str, ours: Mapping[Pair, float | None], theirs: Mapping[Pair, float | None],
            solved: float = 1.0 - 1e-9, seed: int = 0) -> Comparison:
    """Pair the arm's scores with the baseline's by (problem, seed); a pair missing or ungraded
    on either side is left out and counted."""
    keys = sorted(set(ours) | set(theirs))
    both = [(a, b) for k in keys if (a := ours.get(k)) is not None and (b := theirs.get(k)) is not None]
    diffs = [a - b for a, b in both]
    only_arm = sum(a >= solved > b for a, b in both)
    only_baseline = sum(b >= solved > a for a, b in both)
    if not diffs:
        return Comparison(arm, baseline, 0, None, None, None, only_arm, only_baseline, len(keys))
    low, high = bootstrap_ci(diffs, seed=seed)
    return Comparison(arm, baseline, len(diffs), sum(diffs) / len(diffs), low, high, only_arm, only_baseline,
                      len(keys) - len(both))
