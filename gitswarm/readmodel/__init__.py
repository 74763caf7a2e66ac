"""The read model of a run: where each problem stands, computed once for every view.

`read.read_run(memory, index)` reads the index of main (`domain.index.MemoryIndex`) over
main's history, and with it `domain.selection`'s rule, for each problem's candidates, reviews,
verification, nominations, settling and leader, so a view shows what selection would write;
main's tree for item counts, kinds and SOLUTION.md; the ledger's running totals and scheduler
record; the grades. Built afresh, the index walks main's whole history (a second or so on a
run of thousands of commits); a caller that reads again and again keeps one and passes it
(the dashboard does, `tui.reader.Snapshots`), and each read takes in only the new commits.
`gitswarm status`, `gitswarm report` and the dashboard all show what it returns (the types of
`readmodel.model`), so they cannot disagree on a problem's state, selection, nominations,
counts or grade.

**The grade shown** for a problem is the grade of the candidate it stands on: the selected
candidate (SOLUTION.md on main), else the candidate `domain.selection.choose` would select
now. Of that candidate's current grades, one with a score beats one without (an undecided or
ungraded entry never hides a real verdict), and among those the newest wins (ties: the
entry's key, last). The grade shown is therefore the one whose score selection's tie-break
reads (`GradeStore.scores`: each candidate's newest grade with a score). The rule is
`read.shown_grade`; each candidate's own grade follows it too.
"""

from gitswarm.readmodel.model import STATES, Counts, ProblemState, RunState, RunTotals

__all__ = ["STATES", "Counts", "ProblemState", "RunState", "RunTotals"]
