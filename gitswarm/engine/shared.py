"""What every episode of a run shares (`Shared`), what the engine needs of a model (`Model`),
and how a model call is reported once it ended (`replied`, with whose call it was: `Caller`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

from gitswarm.core import event_types as ev
from gitswarm.core.stops import Stop
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.events import EventLog
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.plan import EpisodePlan, RunModes, modes
from gitswarm.engine.references import References
from gitswarm.engine.runview import RunView
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.usage import Usage

if TYPE_CHECKING:
    from gitswarm.engine.config import SolveConfig
    from gitswarm.models.errors import Retry


class Model(Protocol):
    """What the engine needs of a model (gitswarm.models.client.LiteLLMModel in production)."""

    output_limit: int
    """Tokens one reply may have (told to the model when a reply is cut off)."""
    protocol: str
    """How tools reach the model now, `native` or `text` (a nudge shows a call in it)."""

    def may_force_tools(self) -> bool:
        """The provider lets a request force a tool call."""

    async def complete(self, messages: list[dict], tools: list[dict] | None = None, *,
                       tool_choice: str | None = None, on_retry: Callable[[Retry], None] | None = None,
                       on_cut: Callable[[Usage], None] | None = None):
        """One reply; `on_retry` hears of each failed attempt before the next, `on_cut` what a
        cancelled call spent."""


@dataclass
class Shared:
    """What every episode of a run shares."""

    store: Store
    """The run's memory and its git thread: every git call of the run goes through it."""
    index: MemoryIndex
    view: RunView
    """The run's live state (what every step's state block shows)."""
    settings: SolveConfig
    """The run's settings, read by its owners (the scheduler, the merger, the coordinator); an
    episode reads what it knows of them on its plan (`EpisodePlan.terms`)."""
    model: Model
    events: EventLog
    sandbox: anyio.CapacityLimiter
    check_caps: Callable[[], Stop | None]
    """The stop a cap reached calls for when the next call may not be made, else None."""
    ledger: Ledger
    references: References | None = None
    """The reproduce problems' reference executables, for code workers' shells."""
    reviewer: Model | None = None
    """The model review episodes run on (`SolveConfig.reviewer_model`); None: `model`."""
    modes: RunModes = field(init=False)
    """The run's modes, derived once from its settings (`plan.modes`)."""

    def __post_init__(self) -> None:
        self.modes = modes(self.settings)

    @property
    def memory(self) -> Memory:
        """The store's memory, for work on the git thread (`store.run`)."""
        return self.store.memory

    def model_of(self, ep: EpisodePlan) -> Model:
        """The model episode `ep` calls: the reviewer's where its plan runs on it."""
        return self.reviewer if ep.powers.on_reviewer and self.reviewer is not None else self.model


@dataclass(frozen=True)
class Caller:
    """Whose model call it was: an episode's step, or the merger's (no episode)."""

    worker: str
    model: str
    episode: str | None = None
    problem: str | None = None
    step: int | None = None


def replied(shared: Shared, usage: Usage, began: float, who: Caller, finish: str | None = None,
            error: str | None = None) -> None:
    """`reply`: a model call (every attempt of it) ended, what it spent and how long it took
    since `began` (`time.monotonic()`), whose call it was and how it ended."""
    shared.events.emit(ev.Reply(model=who.model, worker=who.worker, episode=who.episode, problem=who.problem,
                                step=who.step, finish=finish, error=error, tokens_in=usage.tokens_in,
                                tokens_out=usage.tokens_out, cache_read=usage.cache_read,
                                cache_write=usage.cache_write, calls=usage.calls,
                                seconds=round(time.monotonic() - began, 3)))
