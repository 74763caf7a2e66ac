"""The dashboard's model: what its panels show, folded from engine events and the read model.

Pure Python, no textual: the app calls `apply` on a batch of events (`tui.reducer` folds each
in) and then redraws only what the batch marked dirty, so 10,000 commits never mean a rescan
per frame; `merge_snapshot` folds in a read of the run's read model.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from gitswarm.core.events import Event
from gitswarm.readmodel.model import STATES, RunState
from gitswarm.tui.reducer import fold, leave
from gitswarm.tui.rows import FeedItem, Header, ProblemRow, WorkerRow

FEED_SIZE = 200


@dataclass
class DashState:
    """Everything the panels show; `dirty` names the panels a batch changed."""

    header: Header = field(default_factory=Header)
    problems: dict[str, ProblemRow] = field(default_factory=dict)
    workers: dict[str, WorkerRow] = field(default_factory=dict)
    processes: tuple = ()
    """In a run on a git remote, the worker processes (`readmodel.workers.WorkerState`), from
    the last read of the read model."""
    feed: deque[FeedItem] = field(default_factory=lambda: deque(maxlen=FEED_SIZE))
    episode_worker: dict[str, str] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    events: int = 0
    feed_total: int = 0
    """Feed items ever appended (the feed widget writes only the new ones)."""

    def problem(self, pid: str) -> ProblemRow:
        row = self.problems.get(pid)
        if row is None:
            row = self.problems[pid] = ProblemRow(pid)
            self.dirty.add("problems")
        return row

    def worker(self, wid: str) -> WorkerRow:
        row = self.workers.get(wid)
        if row is None:
            row = self.workers[wid] = WorkerRow(wid)
        return row

    def apply(self, events: list[Event]) -> set[str]:
        """Fold a batch of events in (`reducer.fold`); returns (and clears) the set of dirty panels."""
        for event in events:
            fold(self, event)
            self.header.last = event.time
            self.events += 1
        dirty, self.dirty = self.dirty, set()
        return dirty


def merge_snapshot(s: DashState, snap: RunState) -> set[str]:
    """Fold a read of the run's read model in: its counts, selection and grade win, a
    state only moves forward (in `readmodel.STATES` order: events may be ahead of
    main's tree), tokens and cost come from the ledger's totals."""
    for p in snap.problems:
        row = s.problem(p.id)
        row.kind, row.counts, row.grade = p.kind, p.counts, p.grade_text
        row.verification = p.verification
        row.lemmas, row.attempts = p.counts.lemmas, p.counts.candidates
        row.nominations = max(row.nominated, p.nomination_total)
        row.selected = p.selected_path or row.selected
        if STATES.index(p.state) > STATES.index(row.state if row.state in STATES else "open"):
            row.state = p.state
    if snap.workers != s.processes:
        s.processes = snap.workers
        s.dirty.add("processes")
    cost = snap.totals.cost_usd
    s.header.priced = s.header.priced and cost is not None
    s.header.cost = max(cost, s.header.cost or 0.0) if s.header.priced and cost is not None else None  # never less
    s.header.tokens = max(s.header.tokens, snap.totals.tokens)
    s.header.charged = max(s.header.charged, snap.totals.charged)
    s.dirty |= {"problems", "header"}
    dirty, s.dirty = s.dirty, set()
    return dirty


GONE = "its process is gone with no stop recorded (killed?); the same solve command resumes it"
"""The header of a run that started, never said it stopped, and whose lock no process holds."""


def mark_gone(s: DashState, held: bool | None) -> bool:
    """A run whose process died without a stop event is shown so, not `running` forever; marked
    again running once a process holds it (a resume). Returns whether the header changed."""
    h = s.header
    if held is False and h.started is not None and h.stopped is None:
        h.stopped, h.ended = GONE, time.time()
        for w in s.workers.values():
            leave(s, w)
        return True
    if held and h.stopped == GONE:
        h.stopped = h.ended = None
        return True
    return False
