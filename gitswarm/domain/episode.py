"""The ledger's records: one `EpisodeRecord` per episode, and the run's `Totals` (the sums
over them), with the class of a failed episode (`Failure`). Pure: `engine.ledger.Ledger` keeps
them in the run's book (`refs/gitswarm/ledger`), `memory.ledgerbook` reads them back."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from gitswarm.core.status import CHARGED, Status
from gitswarm.usage import Usage


class Failure(StrEnum):
    """The class of a failed episode; the value is what the ledger and events carry
    (`engine.failures` says which error is which)."""

    PROVIDER = "provider"
    MODEL = "model"
    ENGINE = "engine"
    CONTEXT = "context"


USAGE_PARTS = ("tokens_in", "cache_read", "cache_write", "reasoning", "tokens_out", "calls", "failed_calls",
               "estimated_tokens")
"""Input tokens and the cached parts of them, output tokens and the reasoning part, calls and
the failed ones, and the tokens gitswarm counted itself (the provider sent no count)."""


@dataclass
class EpisodeRecord:
    """One episode as the ledger keeps it."""

    episode: str
    worker: str
    problem: str
    status: Status | str = Status.RUNNING
    """A `core.status.Status` (a word a newer gitswarm wrote is kept as it is)."""
    commit: str | None = None
    tokens_in: int = 0
    """Input tokens of every call, cached ones included."""
    tokens_out: int = 0
    """Output tokens of every call, reasoning included."""
    cost_usd: float = 0.0
    """USD of the calls that had a price."""
    cost_known: bool = True
    """Every call had a price."""
    calls: int = 0
    """Attempts that reached the provider, failed and retried ones included."""
    started: float = field(default_factory=time.time)
    ended: float | None = None
    note: str = ""
    cache_read: int = 0
    """Of `tokens_in`, read from the provider's prompt cache."""
    cache_write: int = 0
    """Of `tokens_in`, written to the provider's prompt cache."""
    reasoning: int = 0
    """Of `tokens_out`, spent thinking."""
    failed_calls: int = 0
    """Of `calls`, the attempts that gave no usable reply (errors, timeouts, retries)."""
    unpriced_calls: int = 0
    """Of `calls`, those litellm had no price for."""
    estimated_tokens: int = 0
    """Of the tokens, those litellm counted: the provider's reply carried no count (`Usage`)."""
    process: str = ""
    """In a run on a remote, the worker process that ran it (its slots are `<process>-w01`, ...)."""
    failure: str = ""
    """Of a failed episode, whose failure it was (`Failure`): provider, model, engine or
    context; empty for any other status."""
    model: str = ""
    """The model its calls went to: the run's `model`, or for a review episode its reviewer's
    (empty in a record written before this field)."""
    reviews: str = ""
    """Of an episode the scheduler assigned to review one candidate, that candidate's commit."""
    calls_in: list[int] = field(default_factory=list)
    """Input tokens of each of its successful calls, in order (a compaction's call included)."""
    compactions: int = 0
    """Times its conversation was compacted into an account (`engine.window`)."""
    stubbed: int = 0
    """Batches of old tool outputs replaced by stubs in what its model saw."""
    transcript: str = ""
    """Where the transcript of an episode without a commit is: `git show <this>` prints it. An
    episode with a commit has its transcript as a note on it (`git notes --ref=transcripts show`)."""

    @property
    def path(self) -> str:
        return f"episodes/{self.episode[:4]}/{self.episode}.json"

    @property
    def usage(self) -> Usage:
        """What this episode's calls spent, as one Usage."""
        return Usage(self.tokens_in, self.tokens_out, self.cache_read, self.cache_write, self.reasoning,
                     self.cost_usd, max(self.unpriced_calls, int(not self.cost_known)), self.calls,
                     self.failed_calls, self.estimated_tokens)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        """A record as the ledger stored it; fields a record written before them lacks are 0."""
        kept = {k: v for k, v in data.items() if k in _RECORD_FIELDS}
        if "status" in kept:
            kept["status"] = Status.read(kept["status"])
        return cls(**kept)


@dataclass
class Totals:
    """What the run has spent so far: the sums over every episode record (the merger's too)."""

    episodes: int = 0
    """Worker episodes, in any state (the merger's record is not an episode)."""
    charged: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0
    """Records with at least one call whose price litellm did not know."""
    failed_provider: int = 0
    """Episodes failed because the provider did not answer (`engine.failures`)."""
    failed_model: int = 0
    """Episodes failed because the model's replies went nowhere."""
    failed_engine: int = 0
    """Episodes failed by an unexpected error inside gitswarm."""
    failed_context: int = 0
    """Episodes failed because their conversation outgrew the model's context window."""
    calls: int = 0
    """Model calls that reached the provider, failed ones included."""
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    failed_calls: int = 0
    estimated_tokens: int = 0
    """Of the tokens, those litellm counted because the provider sent no count."""

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def parts(self) -> dict[str, int]:
        """The parts of the run's usage that `status` and `report` show, in their order."""
        return {name: getattr(self, name) for name in USAGE_PARTS}

    def failures(self) -> dict[str, int]:
        """Failed episodes by class: provider, model, engine, context."""
        return {kind.value: getattr(self, f"failed_{kind.value}") for kind in Failure}

    @property
    def usage(self) -> Usage:
        """The run's spending as one Usage (`unpriced_calls` counts records, not calls)."""
        return Usage(self.tokens_in, self.tokens_out, self.cache_read, self.cache_write, self.reasoning,
                     self.cost_usd, self.cost_unknown, self.calls, self.failed_calls, self.estimated_tokens)

    @property
    def cost(self) -> tuple[float, bool]:
        """USD spent, and whether every call's price was known."""
        return self.cost_usd, self.cost_unknown == 0

    def add(self, figures: tuple[int | float, ...], sign: int = 1) -> None:
        for name, value in zip(FIGURES, figures, strict=True):
            setattr(self, name, getattr(self, name) + sign * value)


FIGURES = tuple(f.name for f in fields(Totals))
_SUMMED = FIGURES[FIGURES.index("calls"):]
"""The totals that are plain sums of the record's field of the same name."""
_RECORD_FIELDS = frozenset(f.name for f in fields(EpisodeRecord))


def figures_of(record: EpisodeRecord) -> tuple[int | float, ...]:
    """What one record adds to the totals, in `FIGURES` order."""
    return (int(record.episode != "merger"), int(record.status in CHARGED), record.tokens_in,
            record.tokens_out, record.cost_usd, int(not record.cost_known),
            *(int(record.status == Status.FAILED and record.failure == kind) for kind in Failure),
            *(getattr(record, name) for name in _SUMMED))
