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
import time
from dataclasses import asdict, dataclass, field, fields

from gitswarm.core.status import CHARGED, Status
from gitswarm.engine.failures import Failure
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.usage import Usage

BOOK = "ledger"
USAGE_PARTS = ("tokens_in", "cache_read", "cache_write", "reasoning", "tokens_out", "calls", "failed_calls",
               "estimated_tokens")
"""Input tokens and the cached parts of them, output tokens and the reasoning part, calls and
the failed ones, and the tokens gitswarm counted itself (the provider sent no count)."""


@dataclass
class EpisodeRecord:
    """One episode as the ledger keeps it."""

    episode: str
    worker: str
    problem: str
    status: Status | str = Status.RUNNING
    """A `core.status.Status` (a word a newer gitswarm wrote is kept as it is)."""
    commit: str | None = None
    tokens_in: int = 0
    """Input tokens of every call, cached ones included."""
    tokens_out: int = 0
    """Output tokens of every call, reasoning included."""
    cost_usd: float = 0.0
    """USD of the calls that had a price."""
    cost_known: bool = True
    """Every call had a price."""
    calls: int = 0
    """Attempts that reached the provider, failed and retried ones included."""
    started: float = field(default_factory=time.time)
    ended: float | None = None
    note: str = ""
    cache_read: int = 0
    """Of `tokens_in`, read from the provider's prompt cache."""
    cache_write: int = 0
    """Of `tokens_in`, written to the provider's prompt cache."""
    reasoning: int = 0
    """Of `tokens_out`, spent thinking."""
    failed_calls: int = 0
    """Of `calls`, the attempts that gave no usable reply (errors, timeouts, retries)."""
    unpriced_calls: int = 0
    """Of `calls`, those litellm had no price for."""
    estimated_tokens: int = 0
    """Of the tokens, those litellm counted: the provider's reply carried no count (`Usage`)."""
    process: str = ""
    """In a run on a remote, the worker process that ran it (its slots are `<process>-w01`, ...)."""
    failure: str = ""
    """Of a failed episode, whose failure it was (`engine.failures.Failure`): provider, model or
    engine; empty for any other status."""
    model: str = ""
    """The model its calls went to: the run's `model`, or for a review episode its reviewer's
    (empty in a record written before this field)."""
    reviews: str = ""
    """Of an episode the scheduler assigned to review one candidate, that candidate's commit."""
    transcript: str = ""
    """Where the transcript of an episode without a commit is: `git show <this>` prints it. An
    episode with a commit has its transcript as a note on it (`git notes --ref=transcripts show`)."""

    @property
    def path(self) -> str:
        return f"episodes/{self.episode[:4]}/{self.episode}.json"

    @property
    def usage(self) -> Usage:
        """What this episode's calls spent, as one Usage."""
        return Usage(self.tokens_in, self.tokens_out, self.cache_read, self.cache_write, self.reasoning,
                     self.cost_usd, max(self.unpriced_calls, int(not self.cost_known)), self.calls,
                     self.failed_calls, self.estimated_tokens)

    @classmethod
    def from_dict(cls, data: dict) -> EpisodeRecord:
        """A record as the ledger stored it; fields a record written before them lacks are 0."""
        kept = {k: v for k, v in data.items() if k in _RECORD_FIELDS}
        if "status" in kept:
            kept["status"] = Status.read(kept["status"])
        return cls(**kept)


@dataclass
class Totals:
    """What the run has spent so far: the sums over every episode record (the merger's too)."""

    episodes: int = 0
    """Worker episodes, in any state (the merger's record is not an episode)."""
    charged: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0
    """Records with at least one call whose price litellm did not know."""
    failed_provider: int = 0
    """Episodes failed because the provider did not answer (`engine.failures`)."""
    failed_model: int = 0
    """Episodes failed because the model's replies went nowhere."""
    failed_engine: int = 0
    """Episodes failed by an unexpected error inside gitswarm."""
    calls: int = 0
    """Model calls that reached the provider, failed ones included."""
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    failed_calls: int = 0
    estimated_tokens: int = 0
    """Of the tokens, those litellm counted because the provider sent no count."""

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def parts(self) -> dict[str, int]:
        """The parts of the run's usage that `status` and `report` show, in their order."""
        return {name: getattr(self, name) for name in USAGE_PARTS}

    def failures(self) -> dict[str, int]:
        """Failed episodes by class: provider, model, engine."""
        return {kind.value: getattr(self, f"failed_{kind.value}") for kind in Failure}

    @property
    def usage(self) -> Usage:
        """The run's spending as one Usage (`unpriced_calls` counts records, not calls)."""
        return Usage(self.tokens_in, self.tokens_out, self.cache_read, self.cache_write, self.reasoning,
                     self.cost_usd, self.cost_unknown, self.calls, self.failed_calls, self.estimated_tokens)

    @property
    def cost(self) -> tuple[float, bool]:
        """USD spent, and whether every call's price was known."""
        return self.cost_usd, self.cost_unknown == 0

    def add(self, figures: tuple, sign: int = 1) -> None:
        for name, value in zip(_FIGURES, figures, strict=True):
            setattr(self, name, getattr(self, name) + sign * value)


_FIGURES = tuple(f.name for f in fields(Totals))
_SUMMED = _FIGURES[_FIGURES.index("calls"):]
"""The totals that are plain sums of the record's field of the same name."""
_RECORD_FIELDS = frozenset(f.name for f in fields(EpisodeRecord))


def _json_object(value: object, path: str) -> dict:
    """A record of the ledger's book, each a JSON object (TypeError for any other value)."""
    if not isinstance(value, dict):
        raise TypeError(f"the ledger's record {path} is not a JSON object: {value!r:.60}")
    return value


def _figures(record: EpisodeRecord) -> tuple:
    """What one record adds to the totals, in `_FIGURES` order."""
    return (int(record.episode != "merger"), int(record.status in CHARGED), record.tokens_in,
            record.tokens_out, record.cost_usd, int(not record.cost_known),
            *(int(record.status == Status.FAILED and record.failure == kind) for kind in Failure),
            *(getattr(record, name) for name in _SUMMED))


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

    def __post_init__(self) -> None:
        for record in self.episodes.values():
            self._count(record)

    @classmethod
    def load(cls, memory: Memory) -> Ledger:
        records = memory.records(BOOK)
        state = _json_object(records.pop("scheduler.json", None) or {}, "scheduler.json")
        episodes = {r["episode"]: EpisodeRecord.from_dict(r)
                    for r in (_json_object(value, path) for path, value in records.items())}
        return cls(episodes, state.get("next_number", 1), state.get("rng_state"), spending=state.get("spending"))

    @classmethod
    def summary(cls, memory: Memory) -> Totals:
        """The run's totals from the scheduler record alone; a run written before totals were
        kept is summed record by record."""
        state = _json_object(memory.record(BOOK, "scheduler.json") or {}, "scheduler.json")
        kept = state.get("totals") or {}
        if set(_FIGURES) <= set(kept):
            return Totals(**{k: kept[k] for k in _FIGURES})
        return cls.load(memory).totals

    def _count(self, record: EpisodeRecord) -> None:
        before = self._counted.get(record.episode)
        if before is not None:
            self.totals.add(before, -1)
        self._counted[record.episode] = now = _figures(record)
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
        """Write every changed record and the scheduler state in one commit; in the git thread.

        Group commit: when many episodes end at once their saves queue behind each other, and
        the first flush writes them all, so the ones after it find nothing left to do."""
        with self._lock:
            batch, self._dirty, state = self._dirty, {}, self._state
            restated, self._state_changed = self._state_changed, False
        if not batch and not restated:
            return
        try:
            records: dict[str, object] = {r.path: asdict(r) for r in batch.values()}
            records["scheduler.json"] = state
            shown = ", ".join(f"{r.episode} {r.status}" for r in list(batch.values())[:4])
            more = f" and {len(batch) - 4} more" if len(batch) > 4 else ""
            memory.put_records(BOOK, records, f"ledger: {shown}{more}" if batch else "ledger: scheduler state")
        except BaseException:
            with self._lock:  # not written: the next flush takes them again
                self._dirty = {**batch, **self._dirty}
                self._state_changed = self._state_changed or restated
            raise

    async def write(self, store: Store, record: EpisodeRecord) -> None:
        """Save `record`: returns once it is in the repository."""
        self.changed(record)
        await self.written(store)

    async def written(self, store: Store) -> None:
        """`flush` on the store's git thread: returns once every change is in the repository."""
        await store.run(self.flush, store.memory)

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
