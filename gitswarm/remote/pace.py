"""How long a coordinator or a worker waits between two looks at the remote.

Each look is a git process on both ends, and over ssh a connection each time: a coordinator's
fetch of every claim, a worker's ls-remote of main, the run's ledger, its stop and the
high-water mark. While they move it looks every `POLL_S`; while a look finds what the last
one found (no worker, or every episode a long model call), the wait doubles up to `IDLE_S`,
so a quiet run does not have each process ask the server several times a second. Anything
new, and the next wait is `POLL_S` again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

POLL_S = 0.2
"""The wait after a look that found something new."""
IDLE_S = 2.0
"""The longest wait: how late an idle run sees the first claim that moves."""


@dataclass
class Pace:
    least_s: float = POLL_S
    most_s: float = IDLE_S
    wait_s: float = POLL_S
    """The wait after the last look."""
    _last: object = field(default=None, repr=False)

    def saw(self, state: object) -> float:
        """The wait after a look that found `state` (compared with the last look's): the
        least when it differs, else twice the last wait, up to the most."""
        self.wait_s = self.least_s if state != self._last else min(2 * self.wait_s, self.most_s)
        self._last = state
        return self.wait_s
