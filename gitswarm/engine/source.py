"""`EpisodeSource`: where a scheduler's episodes come from. A local run gives itself its own
(`engine/run.py`'s `LocalSource`); a run on a git remote gives a worker its claims
(`remote/source.py`'s `ClaimSource`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from gitswarm.core.stops import Stop
from gitswarm.domain.episode import EpisodeRecord


class EpisodeSource(Protocol):
    """Where a scheduler's episodes come from: a local run's own (`LocalSource`), or a
    remote run's claims (`remote.source`). For a remote run the run's owner decides when it
    ends (budget, settling, caps); the scheduler keeps only the stops that are its own (an
    error, the user, its time limit) and restarts nothing after a crash (an expired claim is
    run again by whoever takes it over)."""

    batch: bool
    """Several picks are claimed at once (one push for them all), or one at a time."""

    async def refresh(self) -> Stop | None:
        """Catch up with the run (its main, its state); the stop its owner published, if any."""

    def stops_on(self, own: Stop) -> bool:
        """Whether the scheduler's `own` stop ends this process's part of the run."""

    def may_start(self, starting: int) -> bool:
        """Whether one more episode may start, `starting` being this process's in flight or
        being claimed: the run's budget and episode cap, where this process holds them."""

    async def resume(self, restart: Callable[[EpisodeRecord], Awaitable[bool]]) -> None:
        """As the scheduler starts: settle the episodes a crash cut off, `restart` starting one
        again (False when it may not)."""

    async def claim(self, picks: list[tuple[str, str]]) -> list[tuple[str, str] | None]:
        """For each (problem, worker) of `picks`, the (episode id, its problem) now held, or
        None when it may not start now; all in one go, so that one push can claim them. The
        problem is the pick's for a new episode; an expired claim taken over keeps its own."""

    async def finished(self, record: EpisodeRecord) -> None:
        """Hand over a finished episode's results (its record is already saved locally)."""

    def elsewhere(self) -> list[str]:
        """The problems the run's other processes have episodes on now, one per episode."""
