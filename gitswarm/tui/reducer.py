"""How each event changes the dashboard: one handler per kind, chosen by the event's type.

Every kind of `core.events.Known` is either in `HANDLERS` or in `IGNORED` (what the
dashboard shows nothing of); `tests/test_events.py` holds them to that. An `Unknown` event (a
newer gitswarm's kind, a line that does not fit its kind) changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitswarm.core import event_types as ev
from gitswarm.core import remote_events as remote
from gitswarm.core.events import Event
from gitswarm.tui.rows import IN_EPISODE, FeedItem, WorkerRow

if TYPE_CHECKING:
    from gitswarm.tui.state import DashState


def fold(s: DashState, event: Event) -> None:
    """Fold one event into `s` (marking the panels it changes dirty)."""
    handler = HANDLERS.get(type(event))
    if handler is not None:
        handler(s, event)


def leave(s: DashState, w: WorkerRow) -> None:
    """A worker's episode ends: its problem has one fewer in flight."""
    if w.state in IN_EPISODE and w.problem in s.problems:
        row = s.problems[w.problem]
        row.in_flight = max(0, row.in_flight - 1)
    w.state = "idle"


def _feed(s: DashState, item: FeedItem) -> None:
    s.feed.append(item)
    s.feed_total += 1
    s.dirty.add("feed")


def _run_started(s: DashState, e: ev.RunStarted) -> None:
    h = s.header
    h.run, h.model = e.run or "-", e.model or "-"
    h.budget, h.workers, h.charged = e.budget, e.workers, e.charged
    if h.started is not None:  # a resume: the start before it ran until its stop, or its last event
        h.earlier += max(0.0, (h.ended or h.last or h.started) - h.started)
    h.started = e.time
    h.stopped = h.ended = None
    for w in s.workers.values():
        w.state = "idle" if w.state == "exited" else w.state  # a resumed run's workers come back
    for pid in e.problems:
        s.problem(pid)
    s.dirty |= {"header", "problems"}


def _episode_started(s: DashState, e: ev.EpisodeStarted) -> None:
    w = s.worker(e.worker)
    leave(s, w)
    w.episode, w.problem, w.state, w.step, w.tokens, w.since, w.began = (
        e.episode, e.problem, "thinking", 0, 0, e.time, e.time)
    s.episode_worker[w.episode] = w.id
    s.problem(w.problem).in_flight += 1
    if s.problems[w.problem].state == "open":
        s.problems[w.problem].state = "in progress"
    s.dirty |= {"workers", "problems", "header"}


def _step(s: DashState, e: ev.Step) -> None:
    w = s.worker(e.worker)
    w.state, w.step, w.since = "thinking", e.step, e.time
    w.tokens = e.tokens or w.tokens  # the episode's tokens before this step's call
    s.dirty.add("workers")


def _tool(s: DashState, e: ev.Tool) -> None:
    w = s.worker(e.worker)
    w.state = "writing" if e.tool in ("write_file", "contribute", "nominate") else "tool"
    w.since = e.time
    s.dirty.add("workers")


def _retry(s: DashState, e: ev.Retry) -> None:
    """A model call failed and is tried again: the worker waits on the provider, not on the model."""
    w = s.worker(e.worker)
    if w.episode == e.episode:
        w.state, w.since = "retrying", e.time
        s.dirty.add("workers")


def _ended(s: DashState, e: ev.EpisodeEnded) -> None:
    w = s.worker(e.worker)
    made = isinstance(e, ev.Committed | ev.Nominated)
    if w.episode == e.episode:
        w.tokens = e.tokens
        leave(s, w)
        w.since = e.time
        if made:
            w.state = "merging"
    s.header.charged = e.charged or s.header.charged
    s.header.ended_tokens += e.tokens
    s.header.tokens = max(s.header.tokens, s.header.ended_tokens)
    problem = s.problem(e.problem)
    if made:
        if isinstance(e, ev.Committed):
            problem.contributions += 1
        else:
            problem.nominated += 1
            problem.nominations = max(problem.nominations, problem.nominated)
            problem.state = "nominated" if problem.state != "selected" else problem.state
        said = e.note or e.episode
        what = "nomination" if isinstance(e, ev.Nominated) else "review" if e.verdict else "commit"
        if e.verdict:  # a review says what it reviewed and its verdict
            said = f"{e.reviews or 'a candidate'}: {e.verdict}"
        _feed(s, FeedItem(e.time, what, problem.id, w.id, said, e.commit or ""))
    s.dirty |= {"workers", "problems", "header"}


def _merged(s: DashState, e: ev.Merged) -> None:
    for episode in e.episodes:
        w = s.workers.get(s.episode_worker.get(episode, ""))
        if w is not None and w.episode == episode and w.state == "merging":
            w.state, w.since = "idle", e.time
            s.dirty.add("workers")
    _feed(s, FeedItem(e.time, "merge", "-", "merger", f"composed {len(e.episodes)} branch(es)", e.commit,
                      informed_by=len(e.episodes)))


def _resolved(s: DashState, e: ev.ConflictResolved) -> None:
    _feed(s, FeedItem(e.time, "compose", "-", "merger", f"composed {e.path}", ""))


def _selected(s: DashState, e: ev.Selected) -> None:
    row = s.problem(e.problem)
    if e.path:
        row.state, row.selected = "selected", e.path
        if e.verified is not None:
            row.verification = "verified" if e.verified else "rejected by reviews" if e.rejected else "unverified"
        mark = f" ({row.verification})" if e.verified is False else ""
        _feed(s, FeedItem(e.time, "selected", row.id, "-", e.path + mark, ""))
        s.dirty.add("problems")


def _budget_short(s: DashState, e: ev.BudgetShort) -> None:
    _feed(s, FeedItem(e.time, "budget", "-", "-", f"{e.left} episodes left cannot verify all {e.problems} "
                      f"problems: --budget {e.suggested} would", ""))


def _set_aside(s: DashState, e: ev.SetAside) -> None:
    _feed(s, FeedItem(e.time, "set aside", e.problem, "-", f"no progress: {e.detail}", ""))


def _winding_down(s: DashState, e: ev.WindingDown) -> None:
    _feed(s, FeedItem(e.time, "stopping", "-", "-", e.detail, ""))


def _cut(s: DashState, e: ev.EpisodesCut) -> None:
    _feed(s, FeedItem(e.time, "cut short", "-", "-", e.detail, ""))


def _stopped(s: DashState, e: ev.RunStopped) -> None:
    """The run's end, as its message says it (an older event log has only the reason)."""
    s.header.stopped = e.detail or e.reason or "stopped"
    s.header.ended = e.time
    s.header.charged = max(e.charged, s.header.charged)
    s.header.tokens = max(e.tokens, s.header.tokens)
    for w in s.workers.values():
        leave(s, w)
        w.state = "exited"
    s.dirty |= {"header", "workers"}


HANDLERS: dict[type[Event], Callable[[DashState, Any], None]] = {
    ev.RunStarted: _run_started,
    ev.EpisodeStarted: _episode_started,
    ev.Step: _step,
    ev.Tool: _tool,
    ev.Retry: _retry,
    **{ended: _ended for ended in ev.ENDED.values()},
    ev.WindingDown: _winding_down,
    ev.EpisodesCut: _cut,
    ev.Merged: _merged,
    ev.ConflictResolved: _resolved,
    ev.Selected: _selected,
    ev.SetAside: _set_aside,
    ev.BudgetShort: _budget_short,
    ev.RunStopped: _stopped,
}
"""The kinds the dashboard shows, each with what it changes."""
IGNORED: frozenset[type[Event]] = frozenset({
    ev.Reply, ev.Settled, ev.Summarised, ev.MergerFailed,  # the read model's reads show their results
    remote.TakenOver, remote.GivenUp, remote.Refused, remote.PublishRefused, remote.StopPublished,
    remote.PruneStale, remote.PruneRefused, remote.Pruned, remote.RemoteUnreachable, remote.ExitUnmarked,
    remote.SkippedOnly, remote.ClaimsLost, remote.PushFailed, remote.Pushed, remote.PushAbandoned,
    remote.ClaimsReleased, remote.PushRefused,  # a run on a remote: the processes panel reads its claims
})
"""The kinds the dashboard shows nothing of."""
