"""The selection rule's settings and their defaults, in one place and without I/O: the engine
(`engine/selection.py`), the settings (`engine/config.py`) and the views (`readmodel/`) read
them from here, so the dashboard gets them without loading the engine."""

from __future__ import annotations

from dataclasses import dataclass

VERIFY = 2
"""K by default: the `pass` reviews that verify a candidate."""
SETTLE_NOMINATIONS = 3
"""The nominations of a verified leader that settle its problem, by default."""


@dataclass(frozen=True)
class Rule:
    """A run's selection rule: K, and the nominations of a verified leader that settle a problem."""

    verify: int = VERIFY
    settle_nominations: int = SETTLE_NOMINATIONS

    @property
    def workers_needed(self) -> int:
        """Workers (slots) without which no candidate can be verified: K pass reviews count only
        from workers other than its author, so K + 1; one when no review is needed."""
        return self.verify + 1

    @classmethod
    def of(cls, config) -> Rule:
        """The rule of a `SolveConfig` (or anything with `verify` and `settle_nominations`)."""
        return cls(config.verify, config.settle_nominations)

    @classmethod
    def from_record(cls, record: object) -> Rule:
        """The rule the ledger's scheduler record holds (`as_record`); a default for each value
        it lacks (a run from before the record)."""
        values = record if isinstance(record, dict) else {}
        verify, needed = values.get("verify"), values.get("settle_nominations")
        return cls(verify if isinstance(verify, int) else VERIFY,
                   needed if isinstance(needed, int) else SETTLE_NOMINATIONS)

    def as_record(self) -> dict[str, int]:
        return {"verify": self.verify, "settle_nominations": self.settle_nominations}
