"""A referee's grade of one candidate, and the pure rules over grades: how one is shown, and
each candidate's score for selection's tie-break. Kept on the grades ref by
`referee.grades.GradeStore`, one JSON file per entry (`Grade.key`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

NO_MODEL = "none"


def slug(model: str | None) -> str:
    """A model name as a file-name part: `openai/gpt-4o` -> `openai-gpt-4o`."""
    if not model:
        return NO_MODEL
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or NO_MODEL


@dataclass(frozen=True)
class Grade:
    """One grader's verdict on one candidate."""

    problem: str
    candidate: str
    """The full id of the commit that holds the candidate."""
    path: str
    """The candidate's path in that commit (a file, or a folder for programs)."""
    grader: str
    """answer, tests or proof-judge."""
    model: str | None
    """The model that judged (None for graders without one)."""
    score: float | None
    """None when the candidate could not be graded (recorded as such, never as 0)."""
    max: float
    details: dict[str, Any] = field(default_factory=dict)
    judgments: list[dict[str, Any]] = field(default_factory=list)
    time: int = 0

    @property
    def key(self) -> str:
        """The entry's path in the grades tree."""
        return entry_path(self.problem, self.candidate, self.grader, self.model)

    @property
    def graded(self) -> bool:
        return self.score is not None

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False).encode() + b"\n"

    @classmethod
    def from_json(cls, data: bytes) -> Grade:
        return cls(**json.loads(data))


def entry_path(problem: str, candidate: str, grader: str, model: str | None) -> str:
    return f"grades/{problem}/{candidate}/{grader}--{slug(model)}.json"


def describe(grade: Grade | None) -> str:
    """A grade as a short cell for tables (status, report, `gitswarm grade`)."""
    if grade is None:
        return "-"
    if grade.score is None:
        return "ungraded" if grade.grader != "answer" else "undecided"
    details = grade.details
    if grade.grader in ("tests", "reproduce"):
        return f"{grade.score:.2f} ({details.get('passed', '?')}/{details.get('total', '?')} tests)"
    if grade.grader == "proof-judge":
        points = ",".join(str(p) for p in details.get("points", []))
        return f"{grade.score:g}/{grade.max:g} (judges {points})"
    return f"{grade.score:g}/{grade.max:g}"


def statuses_line(grade: Grade | None) -> str | None:
    """A reproduce grade as ProgramBench's evaluator counts it: each expected test's status,
    why nothing ran (if so) and the executable's sha256; None for another grade, or one stored
    before grades kept their statuses."""
    if grade is None or grade.grader != "reproduce" or not grade.details.get("statuses"):
        return None
    details = grade.details
    counts = ", ".join(f"{status} {n}" for status, n in details["statuses"].items())
    error = f" ({details['error_code']})" if details.get("error_code") else ""
    return f"{counts}{error}; executable sha256 {details.get('executable_hash') or 'none (nothing built)'}"


def scores_of(grades: Iterable[Grade]) -> dict[str, float]:
    """Each graded candidate's score among `grades` as a fraction of its maximum (its newest
    grade wins): `GradeStore.scores` over grades already read."""
    found: dict[str, float] = {}
    for grade in sorted(grades, key=lambda g: g.time):
        if grade.score is not None and grade.max:
            found[grade.candidate] = grade.score / grade.max
    return found
