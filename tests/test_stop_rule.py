"""The stop rule as a table: one pure function (`engine.stoprule.decide`) for a local run, a
coordinator and a remote worker, each row the facts one of them has and the stop (or none) it
must reach. The rule's users are held to it by the suite's run tests (test_stops, test_bounds,
test_remote_*); here, its order and each reason's boundary."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitswarm.core.stops import Stop, StopReason
from gitswarm.engine.stoprule import Facts, decide


def no_progress(aside: list[str]) -> Stop:
    return Stop(StopReason.NO_PROGRESS, f"no progress: {', '.join(aside)}")


LOCAL = Facts(budget=10, charged=3, max_episodes=30, episodes=5, problems=("p1", "p2"), settled=(), aside=(),
              busy=False, open=lambda: True, no_progress=no_progress, elapsed_s=5.0)
"""A local run under way: nothing holds."""
COORDINATOR = replace(LOCAL, tokens=900, usd=0.5, max_total_tokens=1000, max_usd=1.0, idle_s=10.0,
                      patience_s=600.0, workers_hint="`gitswarm worker URL`")
"""A coordinator: caps judged on what every worker spent, and its workers' patience."""
WORKER = replace(LOCAL, charged=2)
"""A remote worker: the run's counts as last fetched; the coordinator's stop is published."""
NOTHING_OPEN = {"busy": False, "open": lambda: False}

ROWS = [
    ("local: under way", LOCAL, {}, None),
    ("local: an episode's fatal model error", LOCAL, {"failed": Stop(StopReason.MODEL_FATAL, "auth")}, "model_fatal"),
    ("local: the user, before the budget", LOCAL, {"user": True, "charged": 10}, "user"),
    ("local: SIGTERM says so", LOCAL, {"user": True, "by_signal": True}, "user"),
    ("local: the budget spent, with episodes in flight", LOCAL, {"charged": 10, "busy": True}, "budget"),
    ("local: every problem settled", LOCAL, {"settled": ("p1", "p2")}, "settled"),
    ("local: the time limit", LOCAL, {"time_limit_s": 4.0}, "time_limit"),
    ("local: at the time limit's edge", LOCAL, {"time_limit_s": 5.0}, None),
    ("local: the episode cap waits for those in flight", LOCAL, {"episodes": 30, "busy": True}, None),
    ("local: the episode cap", LOCAL, {"episodes": 30}, "episode_cap"),
    ("local: nothing open, one set aside", LOCAL, {**NOTHING_OPEN, "aside": ("p2",), "settled": ("p1",)},
     "no_progress"),
    ("local: nothing open, none aside (covered by nominations)", LOCAL, NOTHING_OPEN, "settled"),
    ("local: no progress waits for those in flight", LOCAL, {"open": lambda: False, "busy": True}, None),
    ("coordinator: under way", COORDINATOR, {}, None),
    ("coordinator: the remote moved, before all", COORDINATOR, {"moved": "main moved", "user": True}, "remote_moved"),
    ("coordinator: the token cap", COORDINATOR, {"tokens": 1000}, "token_cap"),
    ("coordinator: the USD cap", COORDINATOR, {"usd": 1.0}, "usd_cap"),
    ("coordinator: every unsettled problem aside", COORDINATOR, {**NOTHING_OPEN, "aside": ("p1", "p2")},
     "no_progress"),
    ("coordinator: open claims hold the episode cap", COORDINATOR, {"episodes": 31, "busy": True}, None),
    ("coordinator: a dead worker's claims count", COORDINATOR, {"episodes": 30, "lost": 2}, "episode_cap"),
    ("coordinator: workers quiet for its patience", COORDINATOR, {"idle_s": 601.0}, "no_workers"),
    ("coordinator: quiet, but under its patience", COORDINATOR, {"idle_s": 599.0}, None),
    ("worker: under way", WORKER, {}, None),
    ("worker: its own breakers", WORKER, {"failed": Stop(StopReason.PROVIDER_FAILING, "5 in a row")},
     "provider_failing"),
    ("worker: the run's budget as fetched", WORKER, {"charged": 10}, "budget"),
]


@pytest.mark.parametrize(("facts", "changes", "reason"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_the_rule(facts: Facts, changes: dict, reason: str | None) -> None:
    stop = decide(replace(facts, **changes))
    assert (stop.reason.value if stop else None) == reason, stop


def test_the_words_name_the_cause() -> None:
    assert decide(replace(LOCAL, user=True, by_signal=True)).detail == "stopped by SIGTERM"
    assert decide(replace(COORDINATOR, episodes=30, lost=2)).detail == \
        "episode cap of 30 reached (3 of them charged, budget 10; 2 cut off by a worker's death)"
    idle = decide(replace(COORDINATOR, idle_s=700.0)).detail
    assert "no worker held or closed a claim for 600 s" in idle and "`gitswarm worker URL`" in idle
    assert decide(replace(LOCAL, **NOTHING_OPEN, aside=("p1", "p2"))).detail == "no progress: p1, p2"


def test_what_is_open_is_read_only_when_nothing_is_busy() -> None:
    """`open` costs a pass over every problem's standings: the rule asks it last."""
    asked = []
    decide(replace(LOCAL, busy=True, open=lambda: asked.append(1) or True))
    decide(replace(LOCAL, charged=10, open=lambda: asked.append(1) or True))
    assert asked == []
