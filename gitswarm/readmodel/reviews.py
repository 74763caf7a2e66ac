"""A problem's review verdicts, read from main's tree and a few commits' trailers.

Each review file on main starts with the front matter `tools.Toolbox._stamped` writes
(`reviews`, `path`, `verdict`, `episode`). The front matter only points at the review's
commit, through the op ref `refs/gitswarm/ops/<episode>-final`; what counts is that commit's
trailers (`Kind: review`, `Reviews`, `Verdict`, `Worker`), so a file that merely looks like
a review counts for nothing. The reviewed commit's own `Worker` trailer is its author, whose
reviews of it are left out. Cost: one blob, one ref and one commit per review file, one
commit per reviewed candidate; never the history. A review file rewritten at the same path
by a later episode hides the earlier review here (the engine's index still has it).
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2
from pygit2.enums import FileMode

from gitswarm.engine.index import CANDIDATE_FOLDERS, VERDICTS, candidate_path, episode_order
from gitswarm.memory.trailers import parse, split_ids
from gitswarm.memory.write import find_op
from gitswarm.readmodel.model import ReviewCounts, ReviewEntry
from gitswarm.readmodel.tree import front, subtree


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


def read_reviews(repo: pygit2.Repository, base, pid: str) -> ProblemReviews:
    """The counted reviews of every candidate that a review file on main names."""
    latest: dict[tuple[str, str], ReviewEntry] = {}
    for path, data in _files(repo, subtree(repo, base, "reviews"), f"problems/{pid}/reviews"):
        found = _review(repo, str(front(data).get("episode") or ""), path)
        if found is not None:
            candidate, entry = found
            key = (candidate, entry.worker)
            if key not in latest or episode_order(latest[key].episode) <= episode_order(entry.episode):
                latest[key] = entry
    tallies: dict[str, dict[str, int]] = {}
    paths: dict[str, str] = {}
    trails: dict[str, list[ReviewEntry]] = {}
    for (candidate, worker), entry in latest.items():
        author = _author_and_path(repo, candidate, pid)
        if author is None:
            continue
        paths[candidate] = author[1]
        counted = author[0] != worker  # one's own attempt: named, not counted
        trails.setdefault(candidate, []).append(entry if counted else entry.uncounted())
        if counted:
            tally = tallies.setdefault(candidate, dict.fromkeys(VERDICTS, 0))
            tally[entry.verdict] += 1
    counts = {c: ReviewCounts(t["pass"], t["gaps"], t["critical"]) for c, t in tallies.items()}
    ordered = {c: tuple(sorted(t, key=lambda e: episode_order(e.episode))) for c, t in trails.items()}
    return ProblemReviews(counts, paths, ordered)


def _files(repo: pygit2.Repository, tree, prefix: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of every file below `tree` (reviews may sit in subfolders)."""
    found: list[tuple[str, bytes]] = []
    for entry in tree or ():
        obj, path = repo[entry.id], f"{prefix}/{entry.name}"
        found += _files(repo, obj, path) if entry.filemode == FileMode.TREE else [(path, obj.data)]
    return found


def _review(repo: pygit2.Repository, episode: str, path: str) -> tuple[str, ReviewEntry] | None:
    """(candidate, the review) of episode `episode`'s review commit, from its trailers; None
    when that episode made no review with a verdict."""
    commit = find_op(repo, f"{episode}-final") if episode else None
    if commit is None:
        return None
    trailers = parse(repo[commit].message)
    verdict, candidate = trailers.get("Verdict"), trailers.get("Reviews")
    if trailers.get("Kind") != "review" or verdict not in VERDICTS or not candidate:
        return None
    return candidate, ReviewEntry(trailers.get("Worker", ""), episode, verdict, str(commit), path)


def _author_and_path(repo: pygit2.Repository, candidate: str, pid: str) -> tuple[str, str] | None:
    """The worker that wrote `candidate` and its candidate path, from its trailers."""
    try:
        trailers = parse(repo[candidate].message)
    except (KeyError, ValueError):
        return None
    files = [f for f in split_ids(trailers.get("Files", "")) if f.startswith(CANDIDATE_FOLDERS)]
    if not files:
        return None
    return trailers.get("Worker", ""), f"problems/{pid}/{candidate_path(files[0])}"
