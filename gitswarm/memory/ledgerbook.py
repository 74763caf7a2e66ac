"""Read the ledger's book (`refs/gitswarm/ledger`): the episode records and the scheduler
record, as `engine.ledger.Ledger` writes them. Readers (the read model, the report, the
export) read it here, without the engine."""

from __future__ import annotations

from typing import Any

from gitswarm.domain.episode import FIGURES, EpisodeRecord, Totals, figures_of
from gitswarm.memory.repo import Memory

BOOK = "ledger"
SCHEDULER = "scheduler.json"
"""The scheduler record's file in the book: the run's state beside the episode records."""


def json_object(value: object, path: str) -> dict[str, Any]:
    """A record of the ledger's book, each a JSON object (TypeError for any other value)."""
    if not isinstance(value, dict):
        raise TypeError(f"the ledger's record {path} is not a JSON object: {value!r:.60}")
    return value


def read(memory: Memory) -> tuple[dict[str, EpisodeRecord], dict[str, Any]]:
    """Every episode record (the merger's too), by episode, and the scheduler record."""
    records = memory.records(BOOK)
    state = json_object(records.pop(SCHEDULER, None) or {}, SCHEDULER)
    episodes = {r["episode"]: EpisodeRecord.from_dict(r)
                for r in (json_object(value, path) for path, value in records.items())}
    return episodes, state


def episodes(memory: Memory) -> dict[str, EpisodeRecord]:
    """Every episode record (the merger's too), by episode."""
    return read(memory)[0]


def summary(memory: Memory) -> Totals:
    """The run's totals from the scheduler record alone; a run written before totals were
    kept is summed record by record."""
    state = json_object(memory.record(BOOK, SCHEDULER) or {}, SCHEDULER)
    kept = state.get("totals") or {}
    if set(FIGURES) <= set(kept):
        return Totals(**{k: kept[k] for k in FIGURES})
    totals = Totals()
    for record in episodes(memory).values():
        totals.add(figures_of(record))
    return totals
