"""The budget ledger: one record per episode in `refs/gitswarm/ledger`, plus scheduler state.

Charged episodes are those that ended with a contribution or a nomination; abstaining is
free. What is spent is read back from the ledger on resume, so a killed run never gets its
budget back. Tokens of an episode cut off by a crash are not in the ledger (they were never
reported back to us as a finished episode); that is the one loss, at most C episodes' worth.

The scheduler record also carries running totals, written in the same commit as the episode
record that changed them, so `gitswarm status` reads one small file instead of one record per
episode (100,000 of them on a long run).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from gitswarm.memory.repo import Memory

BOOK = "ledger"
CHARGED = ("contribute", "nominate")


@dataclass
class EpisodeRecord:
    """One episode as the ledger keeps it."""

    episode: str
    worker: str
    problem: str
    status: str = "running"
    """running, contribute, nominate, abstain or failed."""
    commit: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    calls: int = 0
    started: float = field(default_factory=time.time)
    ended: float | None = None
    note: str = ""

    @property
    def path(self) -> str:
        return f"episodes/{self.episode[:4]}/{self.episode}.json"


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

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def cost(self) -> tuple[float, bool]:
        """USD spent, and whether every call's price was known."""
        return self.cost_usd, self.cost_unknown == 0

    def add(self, figures: tuple, sign: int = 1) -> None:
        for name, value in zip(_FIGURES, figures, strict=True):
            setattr(self, name, getattr(self, name) + sign * value)


_FIGURES = ("episodes", "charged", "tokens_in", "tokens_out", "cost_usd", "cost_unknown")


def _figures(record: EpisodeRecord) -> tuple:
    """What one record adds to the totals, in `_FIGURES` order."""
    return (int(record.episode != "merger"), int(record.status in CHARGED), record.tokens_in,
            record.tokens_out, record.cost_usd, int(not record.cost_known))


@dataclass
class Ledger:
    """Episode records and the scheduler's state, mirrored in memory for quick reads."""

    episodes: dict[str, EpisodeRecord] = field(default_factory=dict)
    next_number: int = 1
    rng_state: list | None = None
    totals: Totals = field(default_factory=Totals)
    _counted: dict[str, tuple] = field(default_factory=dict, repr=False)
    """Each episode's figures as the totals hold them (records are mutated in place, so the
    record itself cannot tell what it added before)."""

    def __post_init__(self) -> None:
        for record in self.episodes.values():
            self._count(record)

    @classmethod
    def load(cls, memory: Memory) -> Ledger:
        records = memory.records(BOOK)
        state = records.pop("scheduler.json", {}) or {}
        episodes = {r["episode"]: EpisodeRecord(**r) for r in records.values()}
        return cls(episodes, state.get("next_number", 1), state.get("rng_state"))

    @classmethod
    def summary(cls, memory: Memory) -> Totals:
        """The run's totals from the scheduler record alone; a run written before totals were
        kept is summed record by record."""
        state = memory.record(BOOK, "scheduler.json") or {}
        if "totals" in state:
            return Totals(**state["totals"])
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

    def records_for(self, record: EpisodeRecord) -> dict[str, object]:
        return {record.path: asdict(record),
                "scheduler.json": {"next_number": self.next_number, "rng_state": self.rng_state,
                                   "totals": asdict(self.totals)}}

    def charge(self, record: EpisodeRecord, usage) -> None:
        """Add one model call's usage to its episode's record and to the run's totals at once,
        so the token and USD caps see every call as it happens."""
        record.calls += 1
        record.tokens_in += usage.tokens_in
        record.tokens_out += usage.tokens_out
        if usage.cost_usd is None:
            record.cost_known = False
        else:
            record.cost_usd += usage.cost_usd
        self._count(record)

    def save(self, memory: Memory, record: EpisodeRecord) -> None:
        """Write one episode's record (and the scheduler state); runs in the git thread."""
        self.episodes[record.episode] = record
        self._count(record)
        memory.put_records(BOOK, self.records_for(record), f"ledger: {record.episode} {record.status}")

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
        return sorted((r for r in self.episodes.values() if r.status == "running"),
                      key=lambda r: r.episode)
