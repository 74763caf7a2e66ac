"""A candidate solution of a problem as the run judges it: where it is, who nominated it, its
reviews, its verification and its grade (the read model's per-candidate facts; its content is
`referee.candidates.CandidateContent`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitswarm.domain.grade import Grade, describe
from gitswarm.domain.kinds import Verification
from gitswarm.domain.review import Review, ReviewCounts


@dataclass(frozen=True)
class Candidate:
    """One candidate solution of a problem: an attempt file or a program folder, as written by
    one commit. Per-candidate facts (review verdicts, verification) belong here."""

    path: str
    """Its path in the repository: `problems/<id>/attempts/<name>` or `problems/<id>/code/<slug>`."""
    commit: str | None
    """The commit that wrote it, as the index, a nomination, a review or a grade names
    it. `read_run` always knows it (from the index over main's history); the type still allows
    None, and the views test for it."""
    nominations: int = 0
    """Nominations of this commit on main."""
    grade: Grade | None = None
    """Its grade by the rule of `read.shown_grade`, or None when it has none."""
    reviews: ReviewCounts = field(default_factory=ReviewCounts)
    """Its counted reviews by verdict, as selection counts them (`readmodel.reviews.read_reviews`
    over the index)."""
    verified: bool = False
    """Verified by the run's rule (`Rule.is_verified`): K passes (in a row, where it asks), no critical."""
    trail: tuple[Review, ...] = ()
    """Its reviews, oldest first: each worker's latest, its author's own marked not counted."""

    @property
    def verification(self) -> str:
        """"verified", "rejected by reviews" (a critical review blocks it) or "unverified"."""
        if self.verified:
            return Verification.VERIFIED.value
        return (Verification.REJECTED if self.reviews.critical else Verification.UNVERIFIED).value

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "commit": self.commit, "nominations": self.nominations,
                "grade": describe(self.grade) if self.grade else None, "reviews": self.reviews.as_dict(),
                "verified": self.verified, "trail": [r.as_dict() for r in self.trail]}
