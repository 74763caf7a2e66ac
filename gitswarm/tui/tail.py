"""Follow an append-only event log: each call returns the complete lines added since the last."""

from __future__ import annotations

from pathlib import Path

from gitswarm.core.events import EVENT_LOG, Event, read_line


class LogTail:
    """Reads `<run>/gitswarm-events.jsonl` incrementally; a half-written last line waits."""

    def __init__(self, run: Path) -> None:
        self.path = Path(run) / EVENT_LOG
        self.offset = 0
        self._partial = b""

    def read(self) -> list[Event]:
        """The events appended since the previous call (none if the log does not exist yet)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        return [e for e in map(read_line, lines) if e is not None]
