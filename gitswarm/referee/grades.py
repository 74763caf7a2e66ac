"""Grades, kept in the run repository under `refs/gitswarm/grades`, out of the agents' sight.

The ref is a chain of commits; each adds or replaces one file

    grades/<problem>/<candidate-commit>/<grader>--<model-slug>.json

so there is one entry per (problem, candidate commit, grader, model): grading again finds
the entry and does nothing, unless asked to replace it (`--force`), and every earlier
version stays in the chain's history. The ref moves through `Memory.put_files` only (the
lock, the retry and the compare-and-swap of every ref move).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

from gitswarm.memory import books, commitmeta
from gitswarm.memory.repo import Memory

GRADES_BOOK = "grades"
GRADES_REF = books.ref_name(GRADES_BOOK)
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
    details: dict = field(default_factory=dict)
    judgments: list[dict] = field(default_factory=list)
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


class GradeStore:
    """Read and write the grades of one run."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.repo = memory.reader()
        self.run_id = memory.run_id

    def get(self, problem: str, candidate: str, grader: str, model: str | None) -> Grade | None:
        """The current entry for this key, or None."""
        tip = self.repo.ref(GRADES_REF)
        data = self.repo.file(tip, entry_path(problem, candidate, grader, model)) if tip is not None else None
        return None if data is None else Grade.from_json(data)

    def for_problem(self, problem: str) -> list[Grade]:
        """Every current grade of a problem's candidates."""
        return list(self._walk(f"grades/{problem}"))

    def for_candidate(self, problem: str, candidate: str) -> list[Grade]:
        """Every current grade of one candidate."""
        return list(self._walk(f"grades/{problem}/{candidate}"))

    def scores(self, problem: str) -> dict[str, float]:
        """Each graded candidate's score as a fraction of its maximum (its newest grade wins)."""
        return scores_of(self.for_problem(problem))

    def history(self, grade_key: str) -> list[Grade]:
        """Every version an entry has had, newest first."""
        return [Grade.from_json(data) for data in self.repo.versions(GRADES_REF, grade_key)]

    def put(self, grade: Grade, replace: bool = False) -> tuple[Grade, bool]:
        """Store `grade`; an existing entry of the same key wins unless `replace`.

        Returns the entry now stored and whether it was written (False: an existing one was kept).
        """
        if not grade.time:
            grade = Grade(**{**asdict(grade), "time": int(time.time())})
        written = self.memory.put_files(GRADES_BOOK, {grade.key: grade.to_json()}, self._message(grade),
                                        keep=not replace)
        if written is None and not replace:  # an entry of the same key was there: it stays
            kept = self.get(grade.problem, grade.candidate, grade.grader, grade.model)
            if kept is not None:
                return kept, False
        return grade, True

    def _message(self, grade: Grade) -> str:
        score = "ungraded" if grade.score is None else f"{grade.score:g}/{grade.max:g}"
        record = commitmeta.Grade(run=self.run_id, problem=grade.problem, candidate=grade.candidate,
                                  grader=grade.grader, model=grade.model or "")
        return commitmeta.encode(record, f"grade({grade.problem}): {grade.grader} {score} for {grade.candidate[:12]}")

    def _walk(self, folder: str) -> Iterator[Grade]:
        tip = self.repo.ref(GRADES_REF)
        if tip is not None:
            yield from (Grade.from_json(data) for data in self.repo.below(tip, folder))


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


def scores_of(grades: Iterable[Grade]) -> dict[str, float]:
    """Each graded candidate's score among `grades` as a fraction of its maximum (its newest
    grade wins): `GradeStore.scores` over grades already read."""
    found: dict[str, float] = {}
    for grade in sorted(grades, key=lambda g: g.time):
        if grade.score is not None and grade.max:
            found[grade.candidate] = grade.score / grade.max
    return found
