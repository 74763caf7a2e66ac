"""Every event the engine tells: one small frozen record per kind, `Event` their union.

Each record names its kind (`kind`, the string the event log writes) and carries the fields
its emitters send, under the names the log has always written; `time` is when it happened.
An emitter builds the record (`events.emit(EpisodeStarted(...))`), the event log serialises
it (`core.events.to_line`), readers match it by type. A field left `None` by default is one
only some emitters send (a review's verdict, a remote worker's name): the log leaves it out.
`Unknown` stands for a line of a kind this version does not know, or whose fields do not fit
its kind (`core.events.read_line`).
"""

from __future__ import annotations

import time as clock
from dataclasses import dataclass, field
from typing import ClassVar, Literal


@dataclass(frozen=True, kw_only=True)
class Record:
    """What every event has: its kind (the subclass's), and when it happened (seconds since the epoch)."""

    kind: ClassVar[str]
    time: float = field(default_factory=clock.time)


# -- the run ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RunStarted(Record):
    """A process started (or resumed) the run, with what it runs with."""

    kind: ClassVar[Literal["run_started"]] = "run_started"
    run: str
    model: str
    budget: int
    reviewer_model: str | None
    reviews: str
    isolation: str
    workers: int
    charged: int
    problems: list[str]
    episodes: int
    max_episodes: int | None
    set_aside: list[str]
    stale_locks_removed: list[str]
    sandbox: str
    interrupted: int | None = None
    """A local run: its episodes a crash or a stop cut off, run again."""
    worker: str | None = None
    """A remote worker process: its name."""
    remote: str | None = None
    """A run on a git remote: the remote's URL, as shown."""


@dataclass(frozen=True, kw_only=True)
class BudgetShort(Record):
    """The budget left cannot select a verified solution of every open problem."""

    kind: ClassVar[Literal["budget_short"]] = "budget_short"
    budget: int
    left: int
    problems: int
    per_problem: int
    verify: int
    suggested: int


@dataclass(frozen=True, kw_only=True)
class Settled(Record):
    """A problem's solution is chosen: no more episodes go there."""

    kind: ClassVar[Literal["settled"]] = "settled"
    problem: str


@dataclass(frozen=True, kw_only=True)
class SetAside(Record):
    """A problem's last `episodes` episodes made no progress."""

    kind: ClassVar[Literal["set_aside"]] = "set_aside"
    problem: str
    episodes: int
    detail: str


@dataclass(frozen=True, kw_only=True)
class Selected(Record):
    """At the run's end, a problem's selected solution (`path` None: none)."""

    kind: ClassVar[Literal["selected"]] = "selected"
    problem: str
    path: str | None
    nominations: int
    verified: bool | None
    rejected: bool | None = None
    """True: not verified, with a critical review (every candidate's reviews rejected it); left
    out otherwise."""


@dataclass(frozen=True, kw_only=True)
class WindingDown(Record):
    """The run stops: the episodes in flight get `grace_s` to finish."""

    kind: ClassVar[Literal["winding_down"]] = "winding_down"
    episodes: int
    grace_s: float
    detail: str


@dataclass(frozen=True, kw_only=True)
class EpisodesCut(Record):
    """The episodes still in flight were cut short, and `programs` sandboxed programs killed."""

    kind: ClassVar[Literal["episodes_cut"]] = "episodes_cut"
    episodes: list[str]
    programs: int
    detail: str


@dataclass(frozen=True, kw_only=True)
class RunStopped(Record):
    """The run (or a remote worker's part of it) stopped: why, and what its ledger counts."""

    kind: ClassVar[Literal["run_stopped"]] = "run_stopped"
    reason: str
    """A `core.stops.StopReason` value."""
    detail: str
    charged: int
    episodes: int
    tokens: int
    worker: str | None = None


# -- an episode ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class EpisodeStarted(Record):
    kind: ClassVar[Literal["episode_started"]] = "episode_started"
    episode: str
    worker: str
    problem: str
    restarted: bool


@dataclass(frozen=True, kw_only=True)
class Step(Record):
    """A step's model call begins; `tokens`: the episode's so far."""

    kind: ClassVar[Literal["step"]] = "step"
    episode: str
    worker: str
    problem: str
    step: int
    tokens: int


@dataclass(frozen=True, kw_only=True)
class Retry(Record):
    """A model call failed (`error`: the `ModelError` kind) and is tried again after `delay` s."""

    kind: ClassVar[Literal["retry"]] = "retry"
    episode: str
    worker: str
    problem: str
    step: int
    error: str
    what: str
    attempt: int
    delay: float


@dataclass(frozen=True, kw_only=True)
class Reply(Record):
    """A model call (every attempt of it) ended: an episode's, or the merger's (no episode)."""

    kind: ClassVar[Literal["reply"]] = "reply"
    model: str
    worker: str
    tokens_in: int
    tokens_out: int
    cache_read: int
    cache_write: int
    calls: int
    seconds: float
    episode: str | None = None
    problem: str | None = None
    step: int | None = None
    finish: str | None = None
    error: str | None = None
    """The failed call's `ModelError` kind."""


@dataclass(frozen=True, kw_only=True)
class Tool(Record):
    kind: ClassVar[Literal["tool"]] = "tool"
    episode: str
    worker: str
    tool: str


@dataclass(frozen=True, kw_only=True)
class EpisodeEnded(Record):
    """An episode's end, one kind per outcome (the subclasses)."""

    kind: ClassVar[Literal["committed", "nominated", "abstain", "failed", "stopped"]]
    episode: str
    worker: str
    problem: str
    commit: str | None
    note: str
    tokens: int
    charged: int
    failure: str | None = None
    """A failed episode's class of failure, where known."""
    verdict: str | None = None
    """A review's verdict (pass, gaps, critical)."""
    reviews: str | None = None
    """The candidate a review reviewed (its path in the problem's folder)."""
    process: str | None = None
    """A run on a remote: the worker process the coordinator took it from."""


@dataclass(frozen=True, kw_only=True)
class Committed(EpisodeEnded):
    kind: ClassVar[Literal["committed"]] = "committed"


@dataclass(frozen=True, kw_only=True)
class Nominated(EpisodeEnded):
    kind: ClassVar[Literal["nominated"]] = "nominated"


@dataclass(frozen=True, kw_only=True)
class Abstained(EpisodeEnded):
    kind: ClassVar[Literal["abstain"]] = "abstain"


@dataclass(frozen=True, kw_only=True)
class Failed(EpisodeEnded):
    kind: ClassVar[Literal["failed"]] = "failed"


@dataclass(frozen=True, kw_only=True)
class Stopped(EpisodeEnded):
    """Cut short by a cap or the run's end."""

    kind: ClassVar[Literal["stopped"]] = "stopped"


ENDED: dict[str, type[Committed | Nominated | Abstained | Failed | Stopped]] = {
    "contribute": Committed, "nominate": Nominated, "abstain": Abstained, "failed": Failed, "stopped": Stopped}
"""The end event of each final ledger status (`EpisodeRecord.status`)."""


# -- the merger ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Merged(Record):
    kind: ClassVar[Literal["merged"]] = "merged"
    commit: str
    episodes: list[str]
    parents: int


@dataclass(frozen=True, kw_only=True)
class ConflictResolved(Record):
    kind: ClassVar[Literal["conflict_resolved"]] = "conflict_resolved"
    episode: str
    path: str


@dataclass(frozen=True, kw_only=True)
class Summarised(Record):
    """A problem's SUMMARY.md rewritten (`assembled`: from its items, without a model call)."""

    kind: ClassVar[Literal["summarised"]] = "summarised"
    problem: str
    commit: str
    assembled: bool


@dataclass(frozen=True, kw_only=True)
class MergerFailed(Record):
    kind: ClassVar[Literal["merger_failed"]] = "merger_failed"
    error: str
