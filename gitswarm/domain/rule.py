"""The selection rule's settings and their defaults, in one place: selection (`domain/selection.py`),
the settings (`engine/config.py`) and the views (`readmodel/`) read them from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

VERIFY = 2
"""K by default: the `pass` reviews that verify a candidate."""
SETTLE_NOMINATIONS = 3
"""The nominations of a verified leader that settle its problem, by default."""


class Settings(Protocol):
    """What `Rule.of` needs of a run's settings (a `SolveConfig`); their `verify_in_row` and
    `isolation` are read when they have them."""

    @property
    def verify(self) -> int: ...

    @property
    def settle_nominations(self) -> int: ...


@dataclass(frozen=True)
class Rule:
    """A run's selection rule: K, the nominations of a verified leader that settle a problem,
    whether the K passes must come in a row, and whether nominations are part of the run."""

    verify: int = VERIFY
    settle_nominations: int = SETTLE_NOMINATIONS
    in_row: bool = False
    """The K passes must be the candidate's latest reviews: a `gaps` review restarts its count
    (a `critical` one blocks it in either case; its revision is a new candidate, counted anew)."""
    nominations: bool = True
    """Nominations choose among several verified candidates; without them (independent attempts
    selected by reviews, `isolation` best-of-n) the first verified candidate settles its problem."""
    people_count: bool = False
    """A person's review (`gitswarm review`) counts like a worker's: its pass toward K, its
    critical blocks (`person_reviews` = `counts`); else it is advice, shown and not counted."""

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

    def is_verified(self, passes: int, critical: int) -> bool:
        """K passes (counted as `in_row` says) and no critical review; K = 0 asks for nothing."""
        return self.verify == 0 or (critical == 0 and passes >= self.verify)

    def budget_short(self, budget_left: int, problems: int) -> int | None:
        """The budget that would let the rule select a candidate on every one of `problems`,
        when `budget_left` charged episodes are fewer; None when they suffice."""
        needed = problems * self.episodes_to_select
        return needed if budget_left < needed else None

    @classmethod
    def of(cls, config: Settings) -> Rule:
        """The rule of a `SolveConfig` (or anything with its `verify`, `settle_nominations`,
        `verify_in_row` and `isolation`)."""
        return cls(config.verify, config.settle_nominations, bool(getattr(config, "verify_in_row", False)),
                   getattr(config, "isolation", "shared") != "best-of-n",
                   getattr(config, "person_reviews", "advice") == "counts")

    @classmethod
    def from_record(cls, record: object) -> Rule:
        """The rule the ledger's scheduler record holds (`as_record`); a default for each value
        it lacks (a run from before the record)."""
        values = record if isinstance(record, dict) else {}
        verify, needed = values.get("verify"), values.get("settle_nominations")
        return cls(verify if isinstance(verify, int) else VERIFY,
                   needed if isinstance(needed, int) else SETTLE_NOMINATIONS,
                   values.get("in_row") is True, values.get("nominations") is not False,
                   values.get("people_count") is True)

    def as_record(self) -> dict[str, int | bool]:
        return {"verify": self.verify, "settle_nominations": self.settle_nominations, "in_row": self.in_row,
                "nominations": self.nominations, "people_count": self.people_count}
