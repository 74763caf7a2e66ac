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
from gitswarm.readmodel.model import ReviewCounts
from gitswarm.readmodel.tree import front, subtree


@dataclass(frozen=True)
class ProblemReviews:
    """Review counts per candidate commit, and the path of each reviewed candidate."""

    counts: dict[str, ReviewCounts]
    """Candidate commit -> its counted reviews (absent: none)."""
    paths: dict[str, str]
    """Candidate commit -> `problems/<id>/attempts/...` or `problems/<id>/code/<slug>`, for every
    candidate a review names, its author's own reviews included."""


def read_reviews(repo: pygit2.Repository, base, pid: str) -> ProblemReviews:
    """The counted reviews of every candidate that a review file on main names."""
    latest: dict[tuple[str, str], tuple[tuple[int, str], str]] = {}
    for data in _files(repo, subtree(repo, base, "reviews")):
        found = _review(repo, str(front(data).get("episode") or ""))
        if found is not None:
            candidate, worker, episode, verdict = found
            key = (candidate, worker)
            if key not in latest or latest[key][0] <= episode_order(episode):
                latest[key] = (episode_order(episode), verdict)
    tallies: dict[str, dict[str, int]] = {}
    paths: dict[str, str] = {}
    for (candidate, worker), (_, verdict) in latest.items():
        author = _author_and_path(repo, candidate, pid)
        if author is None:
            continue
        paths[candidate] = author[1]
        if author[0] == worker:
            continue  # one's own attempt: named, not counted
        tally = tallies.setdefault(candidate, dict.fromkeys(VERDICTS, 0))
        tally[verdict] += 1
    counts = {c: ReviewCounts(t["pass"], t["gaps"], t["critical"]) for c, t in tallies.items()}
    return ProblemReviews(counts, paths)


def _files(repo: pygit2.Repository, tree) -> list[bytes]:
    """Every file below `tree` (reviews may sit in subfolders)."""
    found: list[bytes] = []
    for entry in tree or ():
        obj = repo[entry.id]
        found += _files(repo, obj) if entry.filemode == FileMode.TREE else [obj.data]
    return found


def _review(repo: pygit2.Repository, episode: str) -> tuple[str, str, str, str] | None:
    """(candidate, worker, episode, verdict) of episode `episode`'s review commit, from its
    trailers; None when that episode made no review with a verdict."""
    commit = find_op(repo, f"{episode}-final") if episode else None
    if commit is None:
        return None
    trailers = parse(repo[commit].message)
    verdict, candidate = trailers.get("Verdict"), trailers.get("Reviews")
    if trailers.get("Kind") != "review" or verdict not in VERDICTS or not candidate:
        return None
    return candidate, trailers.get("Worker", ""), episode, verdict


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
