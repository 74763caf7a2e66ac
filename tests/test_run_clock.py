"""The run's clock: the dashboard's header and the report (`core.events.running_seconds`)
count the time the run ran, each start to its stop (or a crashed start to its last event),
not the time since it was first started. Events of three starts, one of them crashed, folded
by the dashboard's real reducer."""

from __future__ import annotations

from gitswarm.core.events import event_of, running_seconds
from gitswarm.tui.header import header_text
from gitswarm.tui.state import DashState

STARTS = [("run_started", 100.0), ("step", 105.0), ("run_stopped", 110.0),  # 10 s
          ("run_started", 1000.0), ("step", 1004.0),  # crashed: 4 s to its last event
          ("run_started", 5000.0), ("run_stopped", 5003.0)]  # 3 s


def test_the_run_ran_for_its_starts_not_the_gaps_between_them() -> None:
    assert running_seconds(STARTS) == 17.0
    assert running_seconds(STARTS[:5]) == 14.0  # still running: up to its last event
    assert running_seconds([]) == 0.0


def test_the_dashboards_clock_counts_what_the_report_counts() -> None:
    state = DashState()
    state.apply([event_of(kind, {"detail": "budget spent"} if kind == "run_stopped" else {}, at)
                 for kind, at in STARTS])
    assert header_text(state).startswith("0:00:17  [stopped: budget spent]")
    running = DashState()
    running.apply([event_of(kind, {}, at) for kind, at in STARTS[:5]])
    assert header_text(running, now=1010.0).startswith("0:00:20  [running]")  # 10 s before, 10 s now
