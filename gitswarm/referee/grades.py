"""Grades, kept in the run repository under `refs/gitswarm/grades`, out of the agents' sight.

The ref is a chain of commits; each adds or replaces one file

    grades/<problem>/<candidate-commit>/<grader>--<model-slug>.json

so there is one entry per (problem, candidate commit, grader, model): grading again finds
the entry and does nothing, unless asked to replace it (`--force`), and every earlier
version stays in the chain's history. The ref moves through `Memory.put_files` only (the
lock, the retry and the compare-and-swap of every ref move).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict

from gitswarm.domain.grade import Grade, entry_path, scores_of
from gitswarm.memory import books, commitmeta
from gitswarm.memory.repo import Memory

GRADES_BOOK = "grades"
GRADES_REF = books.ref_name(GRADES_BOOK)
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
        record = commitmeta.GradeRecord(run=self.run_id, problem=grade.problem, candidate=grade.candidate,
                                  grader=grade.grader, model=grade.model or "")
        return commitmeta.encode(record, f"grade({grade.problem}): {grade.grader} {score} for {grade.candidate[:12]}")

    def _walk(self, folder: str) -> Iterator[Grade]:
        tip = self.repo.ref(GRADES_REF)
        if tip is not None:
            yield from (Grade.from_json(data) for data in self.repo.below(tip, folder))

