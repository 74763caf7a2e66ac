"""Messages background work posts to the dashboard (it never touches widgets itself)."""

from __future__ import annotations

from textual.message import Message

from gitswarm.core.events import Event
from gitswarm.memory.model import CommitInfo
from gitswarm.readmodel.model import RunState


class EventsArrived(Message):
    """Engine events: one from the live listener, or a batch tailed from the event log."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events


class SnapshotRead(Message):
    """A fresh read of the run's read model (main's tree, the ledger's totals, the grades)."""

    def __init__(self, snapshot: RunState, held: bool | None = True) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.held = held
        """Some process holds the run's lock (None: cannot be told)."""


class RunFinished(Message):
    """The in-process engine returned (`result`) or raised (`error`)."""

    def __init__(self, result: object | None = None, error: BaseException | None = None) -> None:
        super().__init__()
        self.result = result
        self.error = error


class HistoryRead(Message):
    """The history of the problem the detail view shows."""

    def __init__(self, problem: str, commits: list[CommitInfo]) -> None:
        super().__init__()
        self.problem = problem
        self.commits = commits


class ItemRead(Message):
    """The Markdown of the history item the detail view selected."""

    def __init__(self, commit: str, markdown: str) -> None:
        super().__init__()
        self.commit = commit
        self.markdown = markdown


class GraphRead(Message):
    """The text rendering of a problem's contribution graph."""

    def __init__(self, problem: str, text: str) -> None:
        super().__init__()
        self.problem = problem
        self.text = text
