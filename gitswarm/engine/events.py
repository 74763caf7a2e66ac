"""What the engine tells the outside world: small event records, one JSON line each.

The engine writes every event to `<run>/gitswarm-events.jsonl` (append-only, beside the
git data, so a dashboard in another terminal can follow it) and hands it to the listeners
given to it (the plain progress printer, the dashboard). Listeners never reach back in.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

EVENT_LOG = "gitswarm-events.jsonl"
RUN_LOG = "gitswarm.log"
"""Beside the event log: what a user needs to report a bug (an engine error's traceback)."""


@dataclass(frozen=True)
class Event:
    """One thing that happened: `kind` names it, `data` carries its fields."""

    kind: str
    """run_started, episode_started, step, tool, retry, committed, nominated, abstain, failed,
    set_aside, merged, conflict_resolved, summarised, merger_failed, selected, run_stopped."""
    data: dict[str, object] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


Listener = Callable[[Event], None]


class EventLog:
    """Appends events to the run's event log and passes them to listeners."""

    def __init__(self, run: Path, listeners: list[Listener] | None = None) -> None:
        self.path = Path(run) / EVENT_LOG
        self.listeners = list(listeners or [])
        self._file = self.path.open("a", encoding="utf-8")

    def emit(self, kind: str, **data: object) -> None:
        event = Event(kind, data)
        self._file.write(event.to_json() + "\n")
        self._file.flush()
        for listener in self.listeners:
            listener(event)

    def log_error(self, what: str, error: BaseException) -> Path:
        """Append `error`'s traceback to the run's log (`RUN_LOG`), headed by `what` and the
        time; returns the log's path, for the message that names it."""
        log = self.path.with_name(RUN_LOG)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        trace = "".join(traceback.format_exception(error))
        with log.open("a", encoding="utf-8") as file:
            file.write(f"{stamp} {what}\n{trace}\n")
        return log

    def close(self) -> None:
        self._file.close()


def read_events(run: Path) -> list[Event]:
    """Every complete event of a run (a line cut by a crash is skipped)."""
    path = Path(run) / EVENT_LOG
    events = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                events.append(Event(**json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
    return events
