"""The event log: the engine writes every event (a typed record, `gitswarm.core.events.Event`)
to `<run>/gitswarm-events.jsonl` as one JSON line (`core.events.to_line`; append-only, beside
the git data, so a dashboard in another terminal can follow it) and hands it to the listeners
given to it (the plain progress printer, the dashboard). Listeners never reach back in.

Events are said on the run's event loop: one emitted from another thread while the loop runs
(a remote worker's push, made in a thread) is handed to the loop, so the file (a text stream,
which two threads writing at once can corrupt) and the listeners only ever see one thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from pathlib import Path

from gitswarm.core import events
from gitswarm.core.events import EVENT_LOG, RUN_LOG, Event, Listener

FLUSH_S = 0.1
"""Seconds an event may wait in the file's buffer before it reaches the log: a run makes
several events a model call, and a write to the file for each took the engine's core at a few
hundred episodes in flight. The log is what a reader in another terminal follows (git is the
truth); a process killed outright loses this much of it at most."""


class EventLog:
    """Appends events to the run's event log and passes them to listeners."""

    def __init__(self, run: Path, listeners: list[Listener] | None = None) -> None:
        self.path = Path(run) / EVENT_LOG
        self.listeners = list(listeners or [])
        self._file = self.path.open("a", encoding="utf-8")
        self._flushing: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the events were last said on: another thread hands its events to it."""
        self._lock = threading.Lock()
        """Held while the file is written: after the loop has ended, threads write it themselves."""

    def emit(self, event: Event) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None and self._loop is not None and self._loop.is_running():
            try:  # a thread beside the running loop: said there, in turn with the loop's own
                self._loop.call_soon_threadsafe(self.emit, event)
                return
            except RuntimeError:  # the loop closed meanwhile: written here, under the lock
                pass
        self._loop = loop
        with self._lock:
            self._file.write(events.to_line(event) + "\n")
            if loop is None:  # no loop (a command, a thread after the run): written now
                self._file.flush()
        if loop is not None and self._flushing is None:  # one write of the file for the next `FLUSH_S`'s events
            self._flushing = loop.call_later(FLUSH_S, self.flush)
        for listener in self.listeners:
            listener(event)

    def flush(self) -> None:
        """Write the events emitted so far to the log now."""
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def log_error(self, what: str, error: BaseException) -> Path:
        """Append `error`'s traceback to the run's log (`RUN_LOG`), headed by `what` and the
        time; returns the log's path, for the message that names it."""
        self.flush()
        log = self.path.with_name(RUN_LOG)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        trace = "".join(traceback.format_exception(error))
        with log.open("a", encoding="utf-8") as file:
            file.write(f"{stamp} {what}\n{trace}\n")
        return log

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._file.close()


def read_events(run: Path) -> list[Event]:
    """Every complete event of a run (a line cut by a crash is skipped)."""
    return events.read_events(Path(run) / EVENT_LOG)
