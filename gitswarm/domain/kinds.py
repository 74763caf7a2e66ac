"""The run's vocabulary: the kinds of commit, the item folders of a problem, the candidate
folders, and a review's verdict. Each word is defined once, as the commits and the tree
spell it."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """The `Kind` of a commit of the run."""

    NOTE = "note"
    LEMMA = "lemma"
    ATTEMPT = "attempt"
    REVIEW = "review"
    CODE = "code"
    SUMMARY = "summary"
    NOMINATION = "nomination"
    MERGE = "merge"
    SOLUTION = "solution"
    GRADE = "grade"
    REPLAY = "replay"
    """The commit a replay arm starts from: its start state without the memory a candidate cited."""


CONTRIBUTION_KINDS = frozenset({Kind.NOTE, Kind.LEMMA, Kind.ATTEMPT, Kind.REVIEW, Kind.CODE, Kind.SUMMARY,
                                Kind.NOMINATION})
"""The kinds an episode writes (`memory.write`)."""


class Verdict(StrEnum):
    """A review's verdict: no issue, justification gaps only, or a critical error."""

    PASS = "pass"
    GAPS = "gaps"
    CRITICAL = "critical"


VERDICTS = tuple(Verdict)
"""The verdicts, in the order the prompts and the read model list them."""


class Verification(StrEnum):
    """Whether the candidate a solution commit selected passed verification."""

    VERIFIED = "verified"
    UNVERIFIED = "unverified"
    REJECTED = "rejected by reviews"
    """Not verified, and every candidate of its problem had a critical review: the one with the
    fewest was written (docs/verification.md)."""


KIND_FOLDERS = {"note": "notes", "lemma": "lemmas", "attempt": "attempts", "review": "reviews",
                "code": "code"}
"""The folder of `problems/<id>/` each kind of item is written below."""
ITEM_FOLDERS = tuple(KIND_FOLDERS.values())
CANDIDATE_FOLDERS = ("attempts/", "code/")
"""The folders whose items are candidates: attempt files and program folders."""


def candidate_path(path: str) -> str:
    """The candidate a file belongs to: an attempt file, or a program's folder `code/<slug>`."""
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] == "code" else path


def episode_order(episode: str) -> tuple[int, str]:
    """Episode ids in the order the ledger gave them (`e00012` < `e100000`)."""
    return len(episode), episode
