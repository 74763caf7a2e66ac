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

    @property
    def episodes_to_select(self) -> int:
        """Charged episodes one problem needs at least before the rule selects a candidate: an
        attempt and its K counted reviews, or with K = 0 an attempt and the nominations that
        settle it."""
        return 1 + (self.verify or self.settle_nominations)

    def budget_short(self, budget_left: int, problems: int) -> int | None:
        """The budget that would let the rule select a candidate on every one of `problems`,
        when `budget_left` charged episodes are fewer; None when they suffice."""
        needed = problems * self.episodes_to_select
        return needed if budget_left < needed else None

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
