"""How good the run's selection and its reviewers were, measured against the referee's grades
(`gitswarm grade`, `--all` to grade every candidate, not only the selected ones): how often the
selection picked a best-graded candidate, how many critical reviews the referee confirms (the
candidate is short of full marks), and how many passes it contradicts (false passes). Only
what the referee graded counts; the figures say how much that is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gitswarm.domain.candidate import Candidate
from gitswarm.readmodel.model import ProblemState


@dataclass(frozen=True)
class SelectorQuality:
    """The selection and the reviews of one run, checked against the referee."""

    reviewer: str
    """Who reviewed: the run's model (every review episode runs on it)."""
    graded: int
    """Candidates the referee graded."""
    candidates: int
    """Candidates in all."""
    selected: int
    """Problems with a selection whose candidates the referee graded, the selected one among them."""
    picked_best: int
    """Of those, the selected candidate has the best grade among the graded ones (ties count)."""
    contested: int
    """Of those, problems with two or more graded candidates (where picking can go wrong)."""
    critical: int
    """Counted critical reviews of graded candidates."""
    critical_confirmed: int
    """Of those, on a candidate the referee gave less than full marks."""
    passes: int
    """Counted pass reviews of graded candidates."""
    false_passes: int
    """Of those, on a candidate the referee gave less than full marks."""
    scripted: bool
    """Some grade is the demo's scripted judge's, which knows only the script's texts."""

    def as_dict(self) -> dict:
        return asdict(self)

    def sentence(self) -> str:
        """The figures as the report says them."""
        if not self.graded:
            return ("Selection and reviews against the referee: no candidate is graded yet (`gitswarm grade RUN "
                    "--all` grades every candidate).")
        text = (f"Selection and reviews against the referee ({self.graded} of {self.candidates} candidates graded; "
                f"reviews by {self.reviewer}): the selection picked a best-graded candidate in {self.picked_best} "
                f"of {self.selected} problem(s) ({self.contested} with rivals graded); {self.critical_confirmed} of "
                f"{self.critical} critical review(s) confirmed; {self.false_passes} of {self.passes} pass review(s) "
                "contradicted (false passes).")
        if self.graded < self.candidates:
            text += (f" {self.candidates - self.graded} candidate(s) ungraded: `gitswarm grade RUN --all` grades "
                     "every one it can.")
        if self.scripted:
            text += " Some grades are the demo's scripted judge's: not evidence about a real referee."
        return text


def selector_quality(problems: list[ProblemState], reviewer: str) -> SelectorQuality:
    """The figures over every problem of the run, from the read model's candidates."""
    from gitswarm.report.collect import is_scripted

    every = [c for p in problems for c in p.candidates]
    scored = [(c, s) for c in every if (s := _score(c)) is not None]
    graded = [c for c, _ in scored]
    selected = picked = contested = 0
    for problem in problems:
        marks = {c.commit: s for c in problem.candidates if (s := _score(c)) is not None}
        chosen = problem.selected.candidate if problem.selected else None
        if chosen not in marks:
            continue
        selected += 1
        contested += len(marks) > 1
        picked += marks[chosen] >= max(marks.values())
    reviews = [(r.verdict, s) for c, s in scored for r in c.trail if r.counted]
    critical = [s for verdict, s in reviews if verdict == "critical"]
    passes = [s for verdict, s in reviews if verdict == "pass"]
    return SelectorQuality(
        reviewer=reviewer, graded=len(graded), candidates=len(every), selected=selected, picked_best=picked,
        contested=contested, critical=len(critical), critical_confirmed=sum(s < 1.0 for s in critical),
        passes=len(passes), false_passes=sum(s < 1.0 for s in passes),
        scripted=any(is_scripted(c.grade) for c in graded))


def _score(candidate: Candidate) -> float | None:
    """Its grade as a share of full marks, or None where the referee gave none."""
    grade = candidate.grade
    if grade is None or grade.score is None or not grade.max:
        return None
    return grade.score / grade.max
