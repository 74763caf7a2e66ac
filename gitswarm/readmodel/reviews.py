"""A problem's review verdicts, as the index of main holds them.

The index (`domain.index.MemoryIndex`) keeps each worker's latest review of each candidate,
from the review commits' records (`memory.commitmeta.ReviewRecord`: its `reviews`, `verdict`,
`worker` and `episode`), so a file that merely looks like a review counts for nothing, and a review file
rewritten at the same path by a later episode leaves the earlier review standing. What counts
is what selection counts (`MemoryIndex.reviews_of`: its author's own reviews left out).
"""

from __future__ import annotations

from dataclasses import dataclass

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import VERDICTS, episode_order
from gitswarm.domain.review import Review, ReviewCounts


@dataclass(frozen=True)
class ProblemReviews:
    """Review counts per candidate commit, and the path of each reviewed candidate."""

    counts: dict[str, ReviewCounts]
    """Candidate commit -> its counted reviews (absent: none)."""
    paths: dict[str, str]
    """Candidate commit -> `problems/<id>/attempts/...` or `problems/<id>/code/<slug>`, for every
    candidate a review names, its author's own reviews included."""
    trails: dict[str, tuple[Review, ...]]
    """Candidate commit -> every worker's latest review of it, oldest first, the author's own
    included (marked not counted)."""


def read_reviews(index: MemoryIndex, pid: str, people: bool = False) -> ProblemReviews:
    """The reviews of every candidate of `pid` that a review names, as `index` holds them; a
    person's counted only with `people` (`Rule.people_count`)."""
    counts: dict[str, ReviewCounts] = {}
    paths: dict[str, str] = {}
    trails: dict[str, tuple[Review, ...]] = {}
    for candidate, by_worker in index.problems[pid].reviews.items():
        path = index.path_of(candidate)
        if path is None:
            continue
        paths[candidate] = f"problems/{pid}/{path}"
        tally: dict[str, int] = dict.fromkeys(VERDICTS, 0)
        for review in index.reviews_of(pid, candidate, people):
            tally[review.verdict] += 1
        if any(tally.values()):
            counts[candidate] = ReviewCounts(tally["pass"], tally["gaps"], tally["critical"])
        author = index.authors.get(candidate)
        entries = [r if r.worker != author and (people or not r.person) else r.uncounted() for r in by_worker.values()]
        trails[candidate] = tuple(sorted(entries, key=lambda e: episode_order(e.episode)))
    return ProblemReviews(counts, paths, trails)
