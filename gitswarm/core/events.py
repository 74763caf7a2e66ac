"""What the engine tells the outside world: small event records, one JSON line each.

The engine's `EventLog` (`gitswarm.engine.events`) writes them to `EVENT_LOG` in the run's
folder; the dashboard and the progress printer receive them as `Listener`s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

EVENT_LOG = "gitswarm-events.jsonl"
RUN_LOG = "gitswarm.log"
"""Beside the event log: what a user needs to report a bug (an engine error's traceback)."""


@dataclass(frozen=True)
class Event:
    """One thing that happened: `kind` names it, `data` carries its fields."""

    kind: str
    """run_started, budget_short (the budget left cannot select on every open problem),
    episode_started, step, tool, retry, committed, nominated, abstain, failed, stopped (an episode
    cut short by a cap or the run's end), set_aside, merged, conflict_resolved, summarised,
    settled, merger_failed, selected, winding_down (the episodes in flight get the stop grace),
    episodes_cut, run_stopped (and others: the
    emitters in `engine/` and `remote/` say)."""
    data: dict[str, object] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_json(self) -> str:
        """The event as one JSON line (without its newline)."""
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


Listener = Callable[[Event], None]
