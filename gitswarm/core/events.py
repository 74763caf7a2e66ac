"""What the engine tells the outside world: small event records, one JSON line each.

The engine's `EventLog` (`gitswarm.engine.events`) writes them to `EVENT_LOG` in the run's
folder; the dashboard and the progress printer receive them as `Listener`s.
"""

from __future__ import annotations

import json
import time
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
    """run_started, budget_short (the budget left cannot select on every open problem),
    episode_started, step, reply (a model call ended: its tokens and seconds), tool, retry,
    committed, nominated, abstain, failed, stopped (an episode cut short by a cap or the run's
    end), set_aside, merged, conflict_resolved, summarised, settled, merger_failed, selected,
    winding_down (the episodes in flight get the stop grace), episodes_cut, run_stopped (and
    others: the emitters in `engine/` and `remote/` say)."""
    data: dict[str, object] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_json(self) -> str:
        """The event as one JSON line (without its newline)."""
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


Listener = Callable[[Event], None]


def running_seconds(times: list[tuple[str, float]]) -> float:
    """How long a run ran, from its events' (kind, time) in order: each start from its
    `run_started` to its `run_stopped`, or to its last event where it crashed, summed; the gaps
    between a stop and the next start do not count. What the dashboard's clock and the
    report's wall time both say."""
    total, began, last = 0.0, None, None
    for kind, at in times:
        if kind == "run_started":
            if began is not None:
                total += max(0.0, (last or began) - began)
            began = at
        elif kind == "run_stopped" and began is not None:
            total += max(0.0, at - began)
            began = None
        last = at
    return total + (max(0.0, last - began) if began is not None and last is not None else 0.0)


def read_times(path: Path) -> list[tuple[str, float]]:
    """The (kind, time) of every event of the log at `path`, in order (a line a crash cut is skipped)."""
    found: list[tuple[str, float]] = []
    if not path.exists():
        return found
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                event = json.loads(line)
                found.append((str(event["kind"]), float(event["time"])))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
    return found
