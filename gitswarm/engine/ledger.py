"""The budget ledger: one record per episode in `refs/gitswarm/ledger`, plus scheduler state.

Charged episodes are those that ended with a contribution or a nomination; abstaining is
free. What is spent is read back from the ledger on resume, so a killed run never gets its
budget back. Tokens of an episode cut off by a crash are not in the ledger (they were never
reported back to us as a finished episode); that is the one loss, at most C episodes' worth.
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
class Ledger:
    """Episode records and the scheduler's state, mirrored in memory for quick reads."""

    episodes: dict[str, EpisodeRecord] = field(default_factory=dict)
    next_number: int = 1
    rng_state: list | None = None

    @classmethod
    def load(cls, memory: Memory) -> Ledger:
        records = memory.records(BOOK)
        state = records.pop("scheduler.json", {}) or {}
        episodes = {r["episode"]: EpisodeRecord(**r) for r in records.values()}
        return cls(episodes, state.get("next_number", 1), state.get("rng_state"))

    def new_id(self) -> str:
        episode = f"e{self.next_number:05d}"
        self.next_number += 1
        return episode

    def records_for(self, record: EpisodeRecord) -> dict[str, object]:
        return {record.path: asdict(record),
                "scheduler.json": {"next_number": self.next_number, "rng_state": self.rng_state}}

    def save(self, memory: Memory, record: EpisodeRecord) -> None:
        """Write one episode's record (and the scheduler state); runs in the git thread."""
        self.episodes[record.episode] = record
        memory.put_records(BOOK, self.records_for(record), f"ledger: {record.episode} {record.status}")

    @property
    def charged(self) -> int:
        return sum(r.status in CHARGED for r in self.episodes.values())

    @property
    def tokens(self) -> int:
        return sum(r.tokens_in + r.tokens_out for r in self.episodes.values())

    @property
    def cost(self) -> tuple[float, bool]:
        """USD spent, and whether every call's price was known."""
        records = self.episodes.values()
        return sum(r.cost_usd for r in records), all(r.cost_known for r in records)

    def running(self) -> list[EpisodeRecord]:
        """Episodes a crash cut off: started, never finished."""
        return sorted((r for r in self.episodes.values() if r.status == "running"),
                      key=lambda r: r.episode)
