"""The rows the dashboard's panels show: a problem, a worker, a feed item, the header's totals.
`tui.reducer` fills them in from events, `tui.state.merge_snapshot` from the read model."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from gitswarm.readmodel.model import Counts

IN_EPISODE = ("thinking", "tool", "writing", "retrying")
WORKING = (*IN_EPISODE, "merging")
"""A worker is "merging" from its commit until the merger composes that episode into main
(or the worker starts its next episode first)."""
RESTING = ("idle", "exited")
"""Between episodes, and after the run stopped (the worker is gone until a resume)."""


@dataclass
class ProblemRow:
    """One line of the problems table."""

    id: str
    kind: str = "?"
    state: str = "open"
    contributions: int = 0
    lemmas: int = 0
    attempts: int = 0
    nominations: int = 0
    """Shown: the `nominated` events seen or the nominations on main, whichever is more."""
    nominated: int = 0
    """`nominated` events seen (they come before their merge into main)."""
    grade: str = "-"
    verification: str = "-"
    """verified, unverified, rejected by reviews, not required or "-": the read model's, or the `selected` event's."""
    in_flight: int = 0
    selected: str | None = None
    """The selected solution's path (from the `selected` event, or SOLUTION.md on main)."""
    counts: Counts = field(default_factory=Counts)
    """Item files per folder on main, from the last read of the read model."""


@dataclass
class WorkerRow:
    """One line of the workers table."""

    id: str
    episode: str = "-"
    problem: str = "-"
    state: str = "idle"
    step: int = 0
    tokens: int = 0
    since: float = field(default_factory=time.time)
    """When the worker's state last changed."""
    began: float = field(default_factory=time.time)
    """When its episode started: the `time` column counts from here while it runs."""


@dataclass(frozen=True)
class FeedItem:
    """A commit or merge in the live feed."""

    time: float
    kind: str
    problem: str
    worker: str
    summary: str
    commit: str = ""
    informed_by: int = 0


@dataclass
class Header:
    """The run's totals for the header line."""

    run: str = "-"
    model: str = "-"
    budget: int = 0
    workers: int = 0
    charged: int = 0
    tokens: int = 0
    """Never less than before: the most of the ledger's last count and the ended episodes' sum,
    each a lower bound of what the run spent."""
    ended_tokens: int = 0
    """The tokens of the episodes whose end was seen (an in-flight episode's are in the ledger's
    count already, so this is kept apart rather than added to it)."""
    cost: float | None = None
    """USD so far, never less than before; None: unknown (some call, or the model, has no price)."""
    priced: bool = True
    """False once the run's cost is known to be unknown (a model without a price, said by the
    command that runs it, or a call without one): it stays unknown."""
    max_usd: float | None = None
    started: float | None = None
    """When this start of the run began (a resume starts the clock again)."""
    earlier: float = 0.0
    """Seconds the run ran in its earlier starts, each up to its last event: the clock shows
    the time the run ran, not the time since it was first started."""
    last: float | None = None
    """The time of the last event folded in (where a start that crashed ended)."""
    waiting: str = "starting…"
    """What the header says before the run's first event: the engine loads the model library,
    or the dashboard reads the run's event log."""
    stopped: str | None = None
    ended: float | None = None
    paused: bool = False
