"""How the outside (CLI, dashboard) steers a run."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio


@dataclass
class Control:
    """How the outside (CLI, dashboard) steers a run: a graceful stop, a bounded one, a cut
    of the episodes in flight, and a pause."""

    stop: anyio.Event = field(default_factory=anyio.Event)
    """No episode starts any more; those in flight finish (unless `bounded` or `cut`)."""
    bounded: bool = False
    """The stop came from SIGTERM: the episodes in flight get the run's `stop_grace_s`, then
    are cut short (as at the time limit)."""
    cut: anyio.Event = field(default_factory=anyio.Event)
    """Cut the episodes in flight short now (their transcripts and spending are kept)."""
    paused: bool = False

    def stop_bounded(self) -> None:
        """Stop, giving the episodes in flight the run's grace (SIGTERM)."""
        self.bounded = True
        self.stop.set()

    def cut_now(self) -> None:
        """Stop, cutting the episodes in flight short at once (a second Ctrl-C)."""
        self.stop.set()
        self.cut.set()
