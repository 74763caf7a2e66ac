"""The budget ledger: one record per episode in `refs/gitswarm/ledger`, plus scheduler state.

Charged episodes are those that ended with a contribution or a nomination; abstaining is
free of budget, but every episode counts against the episode cap, and every call's tokens
(failed calls' too) against the token and USD caps. What is spent is read back from the
ledger on resume, so a killed run never gets its budget back. Tokens of an episode cut off
by a crash are not in the ledger (they were never reported back to us as a finished
episode); that is the one loss, at most C episodes' worth.

The scheduler record also carries running totals, written in the same commit as the episode
record that changed them, so `gitswarm status` reads one small file instead of one record per
episode (100,000 of them on a long run).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import anyio

from gitswarm.core.status import Status
from gitswarm.domain.episode import EpisodeRecord, Totals, figures_of
from gitswarm.memory import ledgerbook
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.usage import Usage


class _Batch(NamedTuple):
    """One commit of the ledger: the records it takes (and whether the state changed alone), as
    the book's files, with its message."""

    changed: dict[str, EpisodeRecord]
    restated: bool
    records: dict[str, object]
    message: str


@dataclass
class Ledger:
    """Episode records and the scheduler's state, mirrored in memory for quick reads."""

    episodes: dict[str, EpisodeRecord] = field(default_factory=dict)
    next_number: int = 1
    rng_state: list | None = None
    totals: Totals = field(default_factory=Totals)
    set_aside: list[str] = field(default_factory=list)
    """The problems the no-progress rule has set aside, kept in the scheduler record so that
    `gitswarm status` shows them (a resume works them out again from the records)."""
    selection: dict = field(default_factory=dict)
    """The selection rule the run uses (`verify`, `settle_nominations`), kept in the scheduler
    record so that `gitswarm status` judges verification as the run does."""
    spending: dict | None = None
    """In a run on a remote, the coordinator's count of what every worker process has spent,
    finished episodes and open claims (`remote.spending`), published for the workers' caps."""
    _counted: dict[str, tuple] = field(default_factory=dict, repr=False)
    """Each episode's figures as the totals hold them (records are mutated in place, so the
    record itself cannot tell what it added before)."""
    _dirty: dict[str, EpisodeRecord] = field(default_factory=dict, repr=False)
    _state: dict = field(default_factory=dict, repr=False)
    _state_changed: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _flushing: anyio.Lock = field(default_factory=anyio.Lock, repr=False)

    def __post_init__(self) -> None:
        for record in self.episodes.values():
            self._count(record)

    @classmethod
    def load(cls, memory: Memory) -> Ledger:
        episodes, state = ledgerbook.read(memory)
        selection = state.get("selection")
        return cls(episodes, state.get("next_number", 1), state.get("rng_state"), spending=state.get("spending"),
                   selection=selection if isinstance(selection, dict) else {})

    @classmethod
    def summary(cls, memory: Memory) -> Totals:
        """The run's totals (`ledgerbook.summary`)."""
        return ledgerbook.summary(memory)

    def _count(self, record: EpisodeRecord) -> None:
        before = self._counted.get(record.episode)
        if before is not None:
            self.totals.add(before, -1)
        self._counted[record.episode] = now = figures_of(record)
        self.totals.add(now)

    def new_id(self) -> str:
        episode = f"e{self.next_number:05d}"
        self.next_number += 1
        return episode

    def charge(self, record: EpisodeRecord, usage: Usage) -> None:
        """Add a call's usage (a failed call's too) to its episode's record and to the run's
        totals at once, so the token and USD caps see every call as it happens."""
        for name in ("tokens_in", "tokens_out", "cache_read", "cache_write", "reasoning", "calls",
                     "failed_calls", "unpriced_calls", "estimated_tokens"):
            setattr(record, name, getattr(record, name) + getattr(usage, name))
        record.cost_usd += usage.known_cost_usd
        record.cost_known = record.cost_known and usage.unpriced_calls == 0
        self._count(record)

    def changed(self, record: EpisodeRecord) -> None:
        """Take a new or changed record into the totals and the next flush; on the event loop,
        the one thread that changes records."""
        self.episodes[record.episode] = record
        self._count(record)
        state = self._snapshot()
        with self._lock:
            self._dirty[record.episode] = record
            self._state = state

    def restate(self) -> None:
        """Take a change of the scheduler state alone (no record changed) into the next flush."""
        state = self._snapshot()
        with self._lock:
            self._state, self._state_changed = state, True

    def _snapshot(self) -> dict:
        state = {"next_number": self.next_number, "rng_state": self.rng_state, "totals": asdict(self.totals),
                 "set_aside": list(self.set_aside), "selection": dict(self.selection)}
        return state if self.spending is None else {**state, "spending": self.spending}

    def flush(self, memory: Memory) -> None:
        """Write every changed record and the scheduler state in one commit, from a thread that
        may write (`save`); the engine's writes go through `written`."""
        taken = self._take()
        if taken is None:
            return
        try:
            memory.put_records(ledgerbook.BOOK, taken.records, taken.message)
        except BaseException:
            self._put_back(taken)
            raise

    async def write(self, store: Store, record: EpisodeRecord) -> None:
        """Save `record`: returns once it is in the repository."""
        self.changed(record)
        await self.written(store)

    async def written(self, store: Store) -> None:
        """Every change in the repository, in one commit of the book (`Store.put_records`).

        Group commit: when many episodes end at once their saves queue behind each other, and
        the first writes them all, so the ones after it find nothing left to do. One at a time:
        a save that finds its record taken by a write still in hand returns after that write."""
        async with self._flushing:
            taken = self._take()
            if taken is None:
                return
            try:
                await store.put_records(ledgerbook.BOOK, taken.records, taken.message)
            except BaseException:
                self._put_back(taken)
                raise

    def _take(self) -> _Batch | None:
        """What the next commit writes, taken out of what waits; None when nothing changed."""
        with self._lock:
            batch, self._dirty, state = self._dirty, {}, self._state
            restated, self._state_changed = self._state_changed, False
        if not batch and not restated:
            return None
        records: dict[str, object] = {r.path: asdict(r) for r in batch.values()}
        records[ledgerbook.SCHEDULER] = state
        shown = ", ".join(f"{r.episode} {r.status}" for r in list(batch.values())[:4])
        more = f" and {len(batch) - 4} more" if len(batch) > 4 else ""
        return _Batch(batch, restated, records, f"ledger: {shown}{more}" if batch else "ledger: scheduler state")

    def _put_back(self, taken: _Batch) -> None:
        """A commit not written: the next one takes its changes again."""
        with self._lock:
            self._dirty = {**taken.changed, **self._dirty}
            self._state_changed = self._state_changed or taken.restated

    def save(self, memory: Memory, record: EpisodeRecord) -> None:
        """Save `record` now, from a thread that may write (tests, tools)."""
        self.changed(record)
        self.flush(memory)

    @property
    def charged(self) -> int:
        return self.totals.charged

    @property
    def tokens(self) -> int:
        return self.totals.tokens

    @property
    def cost(self) -> tuple[float, bool]:
        """USD spent, and whether every call's price was known."""
        return self.totals.cost

    def running(self) -> list[EpisodeRecord]:
        """Episodes a crash cut off: started, never finished."""
        return sorted((r for r in self.episodes.values() if r.status == Status.RUNNING),
                      key=lambda r: r.episode)
