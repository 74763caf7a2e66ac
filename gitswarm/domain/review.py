"""A review of a candidate, and a candidate's reviews counted by verdict: one type each, for
the index, selection, the read model and the report."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Review:
    """One review of a candidate: a worker's review commit, as its record says (its `reviews`,
    `verdict`, `worker` and `episode`)."""

    worker: str
    episode: str
    verdict: str
    """pass, gaps or critical (`kinds.Verdict`)."""
    commit: str
    """The review's commit."""
    path: str = ""
    """The review file it wrote (`problems/<id>/reviews/...`), or "" when its commit names none."""
    counted: bool = True
    """Selection counts it: False for its candidate's author's own review (shown, not counted)."""
    person: bool = False
    """A person's review (`gitswarm review`): counted only where the run's `person_reviews` is
    `counts` (`Rule.people_count`)."""

    def uncounted(self) -> Review:
        return replace(self, counted=False)

    def as_dict(self) -> dict[str, str | bool]:
        return {"worker": self.worker, "episode": self.episode, "verdict": self.verdict, "commit": self.commit,
                "path": self.path, "counted": self.counted, "person": self.person}


@dataclass(frozen=True)
class ReviewCounts:
    """A candidate's reviews by verdict: the latest review by each worker other than its
    author, from the review commits on main as the index holds them (their records, whatever
    became of the review files since)."""

    passed: int = 0
    """`pass`: no issue found."""
    gaps: int = 0
    """`gaps`: justification gaps only."""
    critical: int = 0
    """`critical`: at least one critical error."""

    @property
    def total(self) -> int:
        return self.passed + self.gaps + self.critical

    def as_dict(self) -> dict[str, int]:
        """Keyed by the verdicts as `kinds.Verdict` spells them."""
        return {"pass": self.passed, "gaps": self.gaps, "critical": self.critical}
