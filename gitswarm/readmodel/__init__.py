"""The read model of a run: where each problem stands, computed once for every view.

`read.read_run(memory)` reads main's tree, the ledger's running totals (its scheduler
record), the grades and the trailers of the review commits whose files are on main (each
candidate's review counts, `reviews.read_reviews`); never the history, so it costs the same on a run of 100 commits and
on one of 100,000. `gitswarm status`, `gitswarm report` and the dashboard all show what it
returns (the types of `readmodel.model`), so they cannot disagree on a problem's state,
selection, nominations, counts or grade.

**The grade shown** for a problem is the grade of the candidate it stands on: the selected
candidate (SOLUTION.md on main), else the candidate `engine.selection.choose` would select
now. Of that candidate's current grades, one with a score beats one without (an undecided or
ungraded entry never hides a real verdict), and among those the newest wins (ties: the
entry's key, last). The grade shown is therefore the one whose score selection's tie-break
reads (`GradeStore.scores`: each candidate's newest grade with a score). The rule is
`read.shown_grade`; each candidate's own grade follows it too.
"""

from gitswarm.readmodel.model import (
                                      STATES,
                                      Candidate,
                                      Counts,
                                      ProblemState,
                                      ReviewCounts,
                                      ReviewEntry,
                                      RunState,
                                      RunTotals,
                                      Selection,
)

__all__ = ["STATES", "Candidate", "Counts", "ProblemState", "ReviewCounts", "ReviewEntry", "RunState", "RunTotals",
           "Selection"]
