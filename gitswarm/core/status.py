"""An episode's status in the ledger: running, then the final action it ended with."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Where an episode stands (`EpisodeRecord.status`) and how it ended (`Final.action`). A
    `StrEnum`, so a record's JSON keeps the word it always had and reads back the same."""

    RUNNING = "running"
    """Started, not ended: after a crash, the episode a resume runs again."""
    CONTRIBUTE = "contribute"
    """It committed a contribution (charged)."""
    NOMINATE = "nominate"
    """It nominated a candidate (charged)."""
    ABSTAIN = "abstain"
    """It ended without contributing (not charged)."""
    FAILED = "failed"
    """The step limit, its wall clock, replies without a tool call or an error ended it (not charged)."""
    STOPPED = "stopped"
    """The run's end cut it short: a cap, the time limit, a signal (not charged; it says nothing of the problem)."""

    @property
    def charged(self) -> bool:
        """It spent one episode of the run's budget."""
        return self in CHARGED

    @classmethod
    def read(cls, value: object) -> Status | str:
        """A status as a record stored it: the member, or the word as it is when this gitswarm
        does not know it (a record of a newer one is kept, not rewritten)."""
        return cls(value) if isinstance(value, str) and value in cls._value2member_map_ else str(value)


CHARGED = frozenset({Status.CONTRIBUTE, Status.NOMINATE})
"""The statuses the budget counts."""
UNCHARGED = frozenset({Status.ABSTAIN, Status.FAILED})
"""The ended statuses that spent no budget and said something of the problem (the no-progress rule)."""
