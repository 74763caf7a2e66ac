"""A problem's review verdicts, as the engine's index holds them.

The index (`engine.index.MemoryIndex`) keeps each worker's latest review of each candidate,
from the review commits' records (`memory.commitmeta.Review`: its `reviews`, `verdict`,
`worker` and `episode`), so a file that merely looks like a review counts for nothing, and a review file
rewritten at the same path by a later episode leaves the earlier review standing. What counts
is what selection counts (`MemoryIndex.reviews_of`: its author's own reviews left out).
"""

from __future__ import annotations

from dataclasses import dataclass

from gitswarm.engine.index import VERDICTS, MemoryIndex, Review, episode_order
from gitswarm.engine.selection import path_of
from gitswarm.readmodel.model import ReviewCounts, ReviewEntry

REVIEWS = "reviews/"


@dataclass(frozen=True)
class ProblemReviews:
    """Review counts per candidate commit, and the path of each reviewed candidate."""

    counts: dict[str, ReviewCounts]
    """Candidate commit -> its counted reviews (absent: none)."""
    paths: dict[str, str]
    """Candidate commit -> `problems/<id>/attempts/...` or `problems/<id>/code/<slug>`, for every
    candidate a review names, its author's own reviews included."""
    trails: dict[str, tuple[ReviewEntry, ...]]
    """Candidate commit -> every worker's latest review of it, oldest first, the author's own
    included (marked not counted)."""


def read_reviews(index: MemoryIndex, pid: str) -> ProblemReviews:
    """The reviews of every candidate of `pid` that a review names, as `index` holds them."""
    counts: dict[str, ReviewCounts] = {}
    paths: dict[str, str] = {}
    trails: dict[str, tuple[ReviewEntry, ...]] = {}
    for candidate, by_worker in index.problems[pid].reviews.items():
        path = path_of(index, candidate)
        if path is None:
            continue
        paths[candidate] = f"problems/{pid}/{path}"
        tally: dict[str, int] = dict.fromkeys(VERDICTS, 0)
        for review in index.reviews_of(pid, candidate):
            tally[review.verdict] += 1
        if any(tally.values()):
            counts[candidate] = ReviewCounts(tally["pass"], tally["gaps"], tally["critical"])
        author = index.authors.get(candidate)
        entries = [_entry(index, pid, r, r.worker != author) for r in by_worker.values()]
        trails[candidate] = tuple(sorted(entries, key=lambda e: episode_order(e.episode)))
    return ProblemReviews(counts, paths, trails)


def _entry(index: MemoryIndex, pid: str, review: Review, counted: bool) -> ReviewEntry:
    """`review` as the read model shows it, with the review file its commit wrote."""
    files = index.files_of.get(review.commit, ("", []))[1]
    path = next((f"problems/{pid}/{f}" for f in files if f.startswith(REVIEWS)), "")
    return ReviewEntry(review.worker, review.episode, review.verdict, review.commit, path, counted)
