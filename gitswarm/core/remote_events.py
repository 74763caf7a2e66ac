"""The events of a run on a git remote: the coordinator's (what it took in, published and
pruned) and a worker process's (its pushes and claims). Records as in `core.event_types`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from gitswarm.core.event_types import Record

# -- the coordinator ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Holding(Record):
    """A worker's holding of an episode's claim that ended without its results (the subclasses)."""

    kind: ClassVar[Literal["taken_over", "given_up"]]
    episode: str
    worker: str
    problem: str
    generation: int
    tokens: int
    usd: float


@dataclass(frozen=True, kw_only=True)
class TakenOver(Holding):
    """Another worker took the claim over: this holding's spending is abandoned."""

    kind: ClassVar[Literal["taken_over"]] = "taken_over"


@dataclass(frozen=True, kw_only=True)
class GivenUp(Holding):
    """The episode's last allowed holding expired."""

    kind: ClassVar[Literal["given_up"]] = "given_up"


@dataclass(frozen=True, kw_only=True)
class Refused(Record):
    """The coordinator refused a pushed episode's commit (`reason`)."""

    kind: ClassVar[Literal["refused"]] = "refused"
    episode: str
    worker: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class PublishRefused(Record):
    """One of the coordinator's refs on the remote moved outside the run's history."""

    kind: ClassVar[Literal["publish_refused"]] = "publish_refused"
    ref: str
    found: str
    local: str | None
    detail: str


@dataclass(frozen=True, kw_only=True)
class StopPublished(Record):
    """The coordinator published the run's stop for its workers."""

    kind: ClassVar[Literal["stop_published"]] = "stop_published"
    reason: str
    detail: str


@dataclass(frozen=True, kw_only=True)
class PruneStale(Record):
    """A prune's push found refs moved since it read them: gathered again."""

    kind: ClassVar[Literal["prune_stale"]] = "prune_stale"
    refs: list[str]
    detail: str


@dataclass(frozen=True, kw_only=True)
class PruneRefused(Record):
    """The remote refused a prune's deletes (`again`: it will be tried again)."""

    kind: ClassVar[Literal["prune_refused"]] = "prune_refused"
    detail: str
    again: bool


@dataclass(frozen=True, kw_only=True)
class Pruned(Record):
    """The claim and worker refs of `episodes` deleted (`refs` of them; `total` episodes so far)."""

    kind: ClassVar[Literal["pruned"]] = "pruned"
    episodes: list[str]
    refs: int
    total: int


@dataclass(frozen=True, kw_only=True)
class RemoteUnreachable(Record):
    """The remote cannot be reached (said once per outage), by the coordinator or a worker."""

    kind: ClassVar[Literal["remote_unreachable"]] = "remote_unreachable"
    detail: str
    worker: str | None = None


# -- a worker process ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ExitUnmarked(Record):
    """A worker could not mark on the remote that it left the run."""

    kind: ClassVar[Literal["exit_unmarked"]] = "exit_unmarked"
    worker: str
    detail: str


@dataclass(frozen=True, kw_only=True)
class SkippedOnly(Record):
    """Every open problem of the run is one this worker skips."""

    kind: ClassVar[Literal["skipped_only"]] = "skipped_only"
    worker: str
    problems: list[str]
    detail: str


@dataclass(frozen=True, kw_only=True)
class Pushes(Record):
    """What became of a worker's claims of `episodes` (the subclasses)."""

    kind: ClassVar[Literal["claim_lost", "push_failed", "pushed", "push_abandoned", "claims_released"]]
    worker: str
    episodes: list[str]
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class ClaimsLost(Pushes):
    """Another holder has these claims: their episodes' results will not be taken."""

    kind: ClassVar[Literal["claim_lost"]] = "claim_lost"


@dataclass(frozen=True, kw_only=True)
class PushFailed(Pushes):
    kind: ClassVar[Literal["push_failed"]] = "push_failed"


@dataclass(frozen=True, kw_only=True)
class Pushed(Pushes):
    kind: ClassVar[Literal["pushed"]] = "pushed"


@dataclass(frozen=True, kw_only=True)
class PushAbandoned(Pushes):
    """Every try of a batch of results failed."""

    kind: ClassVar[Literal["push_abandoned"]] = "push_abandoned"


@dataclass(frozen=True, kw_only=True)
class ClaimsReleased(Pushes):
    """The worker released these claims, so others run their episodes at once."""

    kind: ClassVar[Literal["claims_released"]] = "claims_released"


@dataclass(frozen=True, kw_only=True)
class PushRefused(Record):
    """Our own refs on the remote hold commits we did not push: another process has our name."""

    kind: ClassVar[Literal["push_refused"]] = "push_refused"
    worker: str
    episodes: list[str]
    refs: list[str]
    detail: str
