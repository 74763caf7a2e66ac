"""The stop rule: why a run ends now, one pure function (`decide`) of what the run knows
(`Facts`), the same for a local run, a coordinator of a run on a git remote and a remote
worker; each fills in the facts it has (a local run has no remote to lose, a worker no
patience of its own).

The order, first that holds wins: a stop that cannot wait (the remote moved under the run, an
episode's stop such as a model error no retry can fix, episodes failing in a row, a cap), the
user, the budget, every problem settled, the time limit; then, once nothing is in flight or
claimed, the episode cap, and no problem left open (set aside: no progress; else settled);
then a coordinator's workers gone quiet for its patience.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from gitswarm.core.stops import Stop, StopReason


@dataclass(frozen=True)
class Facts:
    """What the stop rule reads; counts are the run's, across every process."""

    budget: int
    charged: int
    max_episodes: int
    episodes: int
    """Episodes in any state, and (a coordinator) those a dead worker's claims cut off."""
    problems: Collection[str]
    settled: Collection[str]
    aside: Collection[str]
    """Problems the no-progress rule set aside."""
    busy: bool
    """Episodes are in flight, being claimed, or (a coordinator) claimed by workers."""
    open: Callable[[], bool]
    """Some problem may still get an episode (read only once nothing is busy: it costs a pass
    over the problems' standings)."""
    no_progress: Callable[[list[str]], Stop]
    """The no-progress stop for these set-aside problems, in words that say how they ended."""
    elapsed_s: float = 0.0
    time_limit_s: float | None = None
    tokens: int = 0
    usd: float = 0.0
    max_total_tokens: int | None = None
    max_usd: float | None = None
    failed: Stop | None = None
    """A stop an episode or the run's breakers ran into (a cap inside a call, a model error no
    retry can fix, provider or engine failures in a row)."""
    moved: str | None = None
    """Someone else moved the run's refs on its remote (a coordinator)."""
    user: bool = False
    by_signal: bool = False
    """The user's stop came as SIGTERM, not Ctrl-C."""
    lost: int = 0
    """Of `episodes`, those cut off by a worker's death (said in the episode cap's words)."""
    idle_s: float | None = None
    """Seconds since a worker last held or closed a claim (a coordinator; None elsewhere)."""
    patience_s: float = 0.0
    workers_hint: str = ""
    """The command that starts workers, for a coordinator's no-workers stop."""


def decide(f: Facts) -> Stop | None:
    """Why the run must stop now, or None (see the module's docstring for the order)."""
    if f.moved is not None:
        return Stop(StopReason.REMOTE_MOVED, f.moved)
    if f.failed is not None:
        return f.failed
    if (cap := capped(f.tokens, f.usd, f.max_total_tokens, f.max_usd)) is not None:
        return cap
    if f.user:
        return Stop(StopReason.USER, "stopped by SIGTERM" if f.by_signal else "stopped by the user")
    if f.charged >= f.budget:
        return Stop(StopReason.BUDGET, f"budget of {f.budget} episodes spent")
    if set(f.problems) <= set(f.settled):
        return Stop(StopReason.SETTLED, "every problem is settled")
    if f.time_limit_s is not None and f.elapsed_s > f.time_limit_s:
        return Stop(StopReason.TIME_LIMIT, f"time limit of {f.time_limit_s:.0f} s reached")
    if f.busy:
        return None
    if f.episodes >= f.max_episodes:
        cut = f"; {f.lost} cut off by a worker's death" if f.lost else ""
        return Stop(StopReason.EPISODE_CAP, f"episode cap of {f.max_episodes} reached "
                    f"({f.charged} of them charged, budget {f.budget}{cut})")
    if not f.open():
        aside = [p for p in f.problems if p in f.aside and p not in f.settled]
        return f.no_progress(aside) if aside else Stop(StopReason.SETTLED, "every problem is settled")
    if f.idle_s is not None and f.idle_s > f.patience_s:
        return Stop(StopReason.NO_WORKERS, f"no worker held or closed a claim for {f.patience_s:.0f} s: "
                    f"start workers with {f.workers_hint}, then run the same command again")
    return None


def capped(tokens: int, usd: float, max_tokens: int | None, max_usd: float | None) -> Stop | None:
    """The stop a token or USD cap calls for once `tokens` or `usd` reach it, else None: the
    rule's, and the check made before every model call (`engine.kernel.caps_check`)."""
    if max_tokens is not None and tokens >= max_tokens:
        return Stop(StopReason.TOKEN_CAP, f"token cap of {max_tokens} reached")
    if max_usd is not None and usd >= max_usd:
        return Stop(StopReason.USD_CAP, f"USD cap of {max_usd:.2f} reached")
    return None
