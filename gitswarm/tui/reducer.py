"""How each event changes the dashboard: one handler per kind (`_HANDLERS`); a kind without
one changes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.core.events import Event
from gitswarm.tui.rows import IN_EPISODE, FeedItem, WorkerRow

if TYPE_CHECKING:
    from gitswarm.tui.state import DashState


def fold(s: DashState, event: Event) -> None:
    """Fold one event into `s` (marking the panels it changes dirty)."""
    handler = _HANDLERS.get(event.kind)
    if handler is not None:
        handler(s, event.data, event.time)


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
    leave(s, w)
    w.episode, w.problem, w.state, w.step, w.tokens, w.since, w.began = (
        str(d.get("episode")), str(d.get("problem")), "thinking", 0, 0, t, t)
    s.episode_worker[w.episode] = w.id
    s.problem(w.problem).in_flight += 1
    if s.problems[w.problem].state == "open":
        s.problems[w.problem].state = "in progress"
    s.dirty |= {"workers", "problems", "header"}


def leave(s: DashState, w: WorkerRow) -> None:
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
        leave(s, w)
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
        leave(s, w)
        w.state = "exited"
    s.dirty |= {"header", "workers"}


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
