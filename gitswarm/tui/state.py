"""The dashboard's model: a reducer that folds engine events into panel state.

Pure Python, no textual: the app calls `apply` on a batch of events and then redraws only
what the batch marked dirty, so 10,000 commits never mean a rescan per frame.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from gitswarm.core.events import Event
from gitswarm.readmodel.model import STATES, Counts, RunState

FEED_SIZE = 200
IN_EPISODE = ("thinking", "tool", "writing", "retrying")
WORKING = (*IN_EPISODE, "merging")
RESTING = ("idle", "exited")
"""Between episodes, and after the run stopped (the worker is gone until a resume)."""
"""A worker is "merging" from its commit until the merger composes that episode into main
(or the worker starts its next episode first)."""


@dataclass
class ProblemRow:
    """One line of the problems table."""

    id: str
    kind: str = "?"
    state: str = "open"
    contributions: int = 0
    lemmas: int = 0
    attempts: int = 0
    nominations: int = 0
    """Shown: the `nominated` events seen or the nominations on main, whichever is more."""
    nominated: int = 0
    """`nominated` events seen (they come before their merge into main)."""
    grade: str = "-"
    verification: str = "-"
    """verified, unverified, not required or "-": the read model's, or the `selected` event's."""
    in_flight: int = 0
    selected: str | None = None
    """The selected solution's path (from the `selected` event, or SOLUTION.md on main)."""
    counts: Counts = field(default_factory=Counts)
    """Item files per folder on main, from the last read of the read model."""


@dataclass
class WorkerRow:
    """One line of the workers table."""

    id: str
    episode: str = "-"
    problem: str = "-"
    state: str = "idle"
    step: int = 0
    tokens: int = 0
    since: float = field(default_factory=time.time)
    """When the worker's state last changed."""
    began: float = field(default_factory=time.time)
    """When its episode started: the `time` column counts from here while it runs."""


@dataclass(frozen=True)
class FeedItem:
    """A commit or merge in the live feed."""

    time: float
    kind: str
    problem: str
    worker: str
    summary: str
    commit: str = ""
    informed_by: int = 0


@dataclass
class Header:
    """The run's totals for the header line."""

    run: str = "-"
    model: str = "-"
    budget: int = 0
    workers: int = 0
    charged: int = 0
    tokens: int = 0
    cost: float | None = None
    max_usd: float | None = None
    started: float | None = None
    """When this start of the run began (a resume starts the clock again)."""
    earlier: float = 0.0
    """Seconds the run ran in its earlier starts, each up to its last event: the clock shows
    the time the run ran, not the time since it was first started."""
    last: float | None = None
    """The time of the last event folded in (where a start that crashed ended)."""
    waiting: str = "starting…"
    """What the header says before the run's first event: the engine loads the model library,
    or the dashboard reads the run's event log."""
    stopped: str | None = None
    ended: float | None = None
    paused: bool = False


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
        """Fold a batch of events in; returns (and clears) the set of dirty panels."""
        for event in events:
            handler = _HANDLERS.get(event.kind)
            if handler is not None:
                handler(self, event.data, event.time)
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
    s.header.cost = snap.totals.cost_usd
    s.header.tokens = max(s.header.tokens, snap.totals.tokens)
    s.header.charged = max(s.header.charged, snap.totals.charged)
    s.dirty |= {"problems", "header"}
    dirty, s.dirty = s.dirty, set()
    return dirty


def _feed(s: DashState, item: FeedItem) -> None:
    s.feed.append(item)
    s.feed_total += 1


def _run_started(s: DashState, d: dict, t: float) -> None:
    h = s.header
    h.run, h.model = str(d.get("run", "-")), str(d.get("model") or "-")
    h.budget, h.workers, h.charged = int(d.get("budget", 0)), int(d.get("workers", 0)), int(d.get("charged", 0))
    if h.started is not None:  # a resume: the start before it ran until its stop, or its last event
        h.earlier += max(0.0, (h.ended or h.last or h.started) - h.started)
    h.started = t
    h.stopped = h.ended = None
    for w in s.workers.values():
        w.state = "idle" if w.state == "exited" else w.state  # a resumed run's workers come back
    for pid in d.get("problems", []) or []:
        s.problem(str(pid))
    s.dirty |= {"header", "problems"}


def _episode_started(s: DashState, d: dict, t: float) -> None:
    w = s.worker(str(d.get("worker")))
    _leave(s, w)
    w.episode, w.problem, w.state, w.step, w.tokens, w.since, w.began = (
        str(d.get("episode")), str(d.get("problem")), "thinking", 0, 0, t, t)
    s.episode_worker[w.episode] = w.id
    s.problem(w.problem).in_flight += 1
    if s.problems[w.problem].state == "open":
        s.problems[w.problem].state = "in progress"
    s.dirty |= {"workers", "problems", "header"}


def _leave(s: DashState, w: WorkerRow) -> None:
    """A worker's episode ends: its problem has one fewer in flight."""
    if w.state in IN_EPISODE and w.problem in s.problems:
        row = s.problems[w.problem]
        row.in_flight = max(0, row.in_flight - 1)
    w.state = "idle"


def _step(s: DashState, d: dict, t: float) -> None:
    w = s.worker(str(d.get("worker")))
    w.state, w.step, w.since = "thinking", int(d.get("step", w.step)), t
    w.tokens = int(d.get("tokens") or w.tokens)  # the episode's tokens before this step's call
    s.dirty.add("workers")


def _tool(s: DashState, d: dict, t: float) -> None:
    w = s.worker(str(d.get("worker")))
    w.state = "writing" if d.get("tool") in ("write_file", "contribute", "nominate") else "tool"
    w.since = t
    s.dirty.add("workers")


def _retry(s: DashState, d: dict, t: float) -> None:
    """A model call failed and is tried again: the worker waits on the provider, not on the model."""
    w = s.worker(str(d.get("worker")))
    if w.episode == d.get("episode"):
        w.state, w.since = "retrying", t
        s.dirty.add("workers")


def _ended(s: DashState, d: dict, t: float, kind: str) -> None:
    w = s.worker(str(d.get("worker")))
    if w.episode == d.get("episode"):
        w.tokens = int(d.get("tokens") or 0)
        _leave(s, w)
        w.since = t
        if kind == "committed" or kind == "nominated":
            w.state = "merging"
    s.header.charged = int(d.get("charged") or s.header.charged)
    s.header.tokens += int(d.get("tokens") or 0)
    problem = s.problem(str(d.get("problem")))
    if kind in ("committed", "nominated"):
        if kind == "committed":
            problem.contributions += 1
        else:
            problem.nominated += 1
            problem.nominations = max(problem.nominations, problem.nominated)
            problem.state = "nominated" if problem.state != "selected" else problem.state
        said = str(d.get("note") or d.get("episode") or "")
        what = "nomination" if kind == "nominated" else "review" if d.get("verdict") else "commit"
        if d.get("verdict"):  # a review says what it reviewed and its verdict
            said = f"{d.get('reviews') or 'a candidate'}: {d['verdict']}"
        _feed(s, FeedItem(t, what, problem.id, w.id, said, str(d.get("commit") or "")))
        s.dirty.add("feed")
    s.dirty |= {"workers", "problems", "header"}


def _merged(s: DashState, d: dict, t: float) -> None:
    episodes = list(d.get("episodes") or [])
    for episode in episodes:
        w = s.workers.get(s.episode_worker.get(str(episode), ""))
        if w is not None and w.episode == episode and w.state == "merging":
            w.state, w.since = "idle", t
            s.dirty.add("workers")
    _feed(s, FeedItem(t, "merge", "-", "merger", f"composed {len(episodes)} branch(es)",
                           str(d.get("commit") or ""), informed_by=len(episodes)))
    s.dirty.add("feed")


def _selected(s: DashState, d: dict, t: float) -> None:
    row = s.problem(str(d.get("problem")))
    if d.get("path"):
        row.state, row.selected = "selected", str(d.get("path"))
        if d.get("verified") is not None:
            row.verification = "verified" if d["verified"] else "unverified"
        mark = " (unverified)" if d.get("verified") is False else ""
        _feed(s, FeedItem(t, "selected", row.id, "-", str(d.get("path")) + mark, ""))
        s.dirty |= {"problems", "feed"}


def _budget_short(s: DashState, d: dict, t: float) -> None:
    _feed(s, FeedItem(t, "budget", "-", "-", f"{d.get('left')} episodes left cannot verify all {d.get('problems')} "
                      f"problems: --budget {d.get('suggested')} would", ""))
    s.dirty.add("feed")


def _notice(s: DashState, t: float, what: str, detail: str) -> None:
    """A line of the feed about the run as a whole."""
    _feed(s, FeedItem(t, what, "-", "-", detail, ""))
    s.dirty.add("feed")


def _set_aside(s: DashState, d: dict, t: float) -> None:
    problem = str(d.get("problem"))
    _feed(s, FeedItem(t, "set aside", problem, "-", f"no progress: {d.get('detail') or ''}", ""))
    s.dirty.add("feed")


def _stopped(s: DashState, d: dict, t: float) -> None:
    """The run's end, as its message says it (an older event log has only the reason)."""
    s.header.stopped = str(d.get("detail") or d.get("reason") or "stopped")
    s.header.ended = t
    s.header.charged = int(d.get("charged") or s.header.charged)
    s.header.tokens = int(d.get("tokens") or s.header.tokens)
    for w in s.workers.values():
        _leave(s, w)
        w.state = "exited"
    s.dirty |= {"header", "workers"}


GONE = "its process is gone with no stop recorded (killed?); the same solve command resumes it"
"""The header of a run that started, never said it stopped, and whose lock no process holds."""


def mark_gone(s: DashState, held: bool | None) -> bool:
    """A run whose process died without a stop event is shown so, not `running` forever; marked
    again running once a process holds it (a resume). Returns whether the header changed."""
    h = s.header
    if held is False and h.started is not None and h.stopped is None:
        h.stopped, h.ended = GONE, time.time()
        for w in s.workers.values():
            _leave(s, w)
        return True
    if held and h.stopped == GONE:
        h.stopped = h.ended = None
        return True
    return False


def _resolved(s: DashState, d: dict, t: float) -> None:
    _feed(s, FeedItem(t, "compose", "-", "merger", f"composed {d.get('path')}", ""))
    s.dirty.add("feed")


_HANDLERS = {
    "run_started": _run_started,
    "episode_started": _episode_started,
    "step": _step,
    "tool": _tool,
    "retry": _retry,
    "committed": lambda s, d, t: _ended(s, d, t, "committed"),
    "nominated": lambda s, d, t: _ended(s, d, t, "nominated"),
    "abstain": lambda s, d, t: _ended(s, d, t, "abstain"),
    "failed": lambda s, d, t: _ended(s, d, t, "failed"),
    "stopped": lambda s, d, t: _ended(s, d, t, "stopped"),
    "winding_down": lambda s, d, t: _notice(s, t, "stopping", str(d.get("detail") or "")),
    "episodes_cut": lambda s, d, t: _notice(s, t, "cut short", str(d.get("detail") or "")),
    "merged": _merged,
    "conflict_resolved": _resolved,
    "selected": _selected,
    "set_aside": _set_aside,
    "budget_short": _budget_short,
    "run_stopped": _stopped,
}
