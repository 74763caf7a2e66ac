"""How the episodes in flight end when a run stops.

They finish, for as long as they take, after a budget, a cap or a first Ctrl-C; within the
run's `stop_grace_s` where the stop bounds the run's time (the time limit, SIGTERM); and not
at all once the user asks for a cut (a second Ctrl-C). Those still running then are cut short
(`Cut`): each ends `stopped` with what any ending keeps, and the programs they run in
the sandbox are killed, since a shell command would otherwise hold its episode until its own
timeout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio

from gitswarm import sandbox
from gitswarm.core.control import Control
from gitswarm.core.event_types import EpisodesCut, WindingDown
from gitswarm.core.stops import Stop, StopReason
from gitswarm.engine.events import EventLog


@dataclass
class Cut:
    """How the scheduler cuts an episode short (the run's time limit or SIGTERM after their
    grace, a second Ctrl-C): its tool loop is cancelled, and the episode ends `stopped` with
    `why`, keeping what any ending keeps (transcript, spending, staged files)."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    why: str = ""

    def __call__(self, why: str) -> None:
        self.why = why
        self.scope.cancel()


async def wind_down(stop: Stop, in_flight: Mapping[str, object], cuts: Mapping[str, Cut], control: Control,
                    grace_s: float, events: EventLog) -> None:
    """Wait for `in_flight` (which the episodes empty as they end) as `stop` allows, then cut
    what is left."""
    bounded = stop.reason is StopReason.TIME_LIMIT or control.bounded
    grace = grace_s if bounded else math.inf
    if in_flight and bounded:
        events.emit(WindingDown(episodes=len(in_flight), grace_s=grace,
                                detail=f"{stop.detail}: the {len(in_flight)} episode(s) in flight have {grace:.0f} s "
                                       "to finish, then are cut short"))
    deadline = time.monotonic() + grace
    while in_flight and not control.cut.is_set() and time.monotonic() < deadline:
        with anyio.move_on_after(min(0.5, max(0.0, deadline - time.monotonic()))):
            await control.cut.wait()
    if in_flight:
        why = ("cut short by a second stop" if control.cut.is_set() else
               f"cut short {grace:.0f} s after " + ("SIGTERM" if control.bounded else "the time limit"))
        cut(cuts, why, events)


def cut(cuts: Mapping[str, Cut], why: str, events: EventLog) -> None:
    """Cut every episode of `cuts` short, and kill the programs this process runs."""
    episodes = sorted(cuts)
    for each in list(cuts.values()):
        each(why)
    killed = sandbox.stop_all()
    events.emit(EpisodesCut(episodes=episodes, programs=killed,
                            detail=f"{why}: {', '.join(episodes)}; their transcripts, spending and staged files are "
                                   "kept, and the next run works on their problems again"))
