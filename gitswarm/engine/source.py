"""Where a scheduler's episodes come from: the `EpisodeSource` protocol, and `LocalSource`,
the episodes of a run this process owns (a local `solve`).

A run on a git remote gives a worker its claims (`remote/source.py`'s `ClaimSource`); a local
run gives itself its own: ids from the ledger's numbering, one start at a time, the run's
budget and episode cap checked against its ledger, every stop of the scheduler's own its run's
stop, the episodes a crash cut off finished or started again as the run resumes, and the merger
told of each commit.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from gitswarm.core.stops import Stop
from gitswarm.engine.episode import Shared
from gitswarm.engine.ledger import EpisodeRecord, Ledger
from gitswarm.engine.merger import Merger


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


@dataclass
class LocalSource:
    """The episodes of a local run: the scheduler's own (see the module docstring)."""

    shared: Shared
    ledger: Ledger
    merger: Merger
    batch: bool = False
    """One pick claimed at a time: each sees the one before it start."""

    async def refresh(self) -> Stop | None:
        return None  # nobody else decides when this run ends

    def stops_on(self, own: Stop) -> bool:
        return True

    def may_start(self, starting: int) -> bool:
        """The budget and the episode cap may not be passed by one more episode (those in
        flight or `starting` are counted already, or about to be)."""
        cfg = self.shared.view.config
        return self.ledger.charged + starting < cfg.budget and self.ledger.totals.episodes < cfg.max_episodes

    async def claim(self, picks: list[tuple[str, str]]) -> list[tuple[str, str] | None]:
        return [(self.ledger.new_id(), problem) for problem, _ in picks]

    async def resume(self, restart: Callable[[EpisodeRecord], Awaitable[bool]]) -> None:
        """Finish the records of the episodes a crash cut off: those whose commit was made
        are recorded as made; the others start again (`restart`, when their worker is free and
        their problem not settled) or are recorded as stopped."""
        memory, git = self.shared.memory, self.shared.git
        for record in self.ledger.running():
            done = await git(memory.op_commit, f"{record.episode}-final")
            if done is not None:
                info = await git(memory.commit, done)
                record.status = "nominate" if info.kind == "nomination" else "contribute"
                record.commit, record.ended = done, time.time()
                record.note = "finished before a crash; recorded on resume"
                await self.ledger.write(git, memory, record)
            elif not await restart(record):
                record.status, record.note = "stopped", "cut off by a crash, not restarted"
                record.ended = time.time()
                await self.ledger.write(git, memory, record)
        self.merger.kick()

    async def finished(self, record: EpisodeRecord) -> None:
        if record.commit:
            self.merger.kick(record.episode)

    def elsewhere(self) -> list[str]:
        return []
