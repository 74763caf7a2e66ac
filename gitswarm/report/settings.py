"""What a run was run with: its model, budget, workers and verification rule.

The read model has the rule alone (the ledger's scheduler record, `readmodel.read.rule_of`).
The model, budget and workers come from the `run_started` events of the run's event log
(one per start: a resume may change them); a run read from its remote has no event log, and
then the model (the coordinator's) and the budget come from the settings its coordinator
published on the meta ref, and the workers are the worker processes the read model lists.
"""

from __future__ import annotations

import json
import mmap
from dataclasses import asdict, dataclass
from pathlib import Path

from gitswarm.core.event_types import RunStarted
from gitswarm.core.events import EVENT_LOG, read_line
from gitswarm.domain.rule import Rule
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.read import rule_of, scheduler_record


@dataclass(frozen=True)
class RunSettings:
    """The settings a report names; None where the run did not record one."""

    model: str | None
    """The workers' model; several, in order, when resumes changed it (", then "). Read from
    the published settings of a run on a remote: its coordinator's (each worker process may
    run its own)."""
    budget: int | None
    """Charged episodes the run may spend (as of its last start)."""
    max_episodes: int | None
    """Episodes of any outcome it may run (as of its last start)."""
    workers: int | None
    """Concurrent episodes of the last start (in a run on a remote: the coordinator's own slots)."""
    starts: int
    """`run_started` events: 1, plus one per resume; 0 without an event log."""
    verify: int
    """K: the `pass` reviews (and no critical one) a candidate needs to be verified; 0: none."""
    settle_nominations: int
    """The nominations of one candidate that settle a problem."""
    source: str
    """Where model, budget and workers were read: the event log, the published settings, or nothing."""
    reviewer: str | None = None
    """The model of its review episodes (`solve --reviewer-model`), as of its last start; None:
    the workers' model (or not recorded)."""
    reviews: str | None = None
    """Who wrote its reviews and what they saw: open, assigned or blind (as of its last start)."""
    isolation: str | None = None
    """shared, independent or best-of-n (as of its last start)."""
    in_row: bool = False
    """The K passes had to come in a row (the ledger's rule)."""
    sandbox: str | None = None
    """What the programs of its starts ran under ("bwrap", "namespaces", "unconfined"; several,
    in order, when resumes differed); None where not recorded."""

    @property
    def unconfined(self) -> bool:
        """Some start let programs run without a sandbox (`solve --unconfined`)."""
        return "unconfined" in (self.sandbox or "")

    def as_dict(self) -> dict:
        return asdict(self)


def read_settings(memory: Memory, run: Path) -> RunSettings:
    """The run's settings from its event log (else the published settings) and its ledger."""
    record = scheduler_record(memory)
    verify, settle = rule_of(record)
    in_row = Rule.from_record(record.get("selection")).in_row
    starts = _starts(run / EVENT_LOG)
    if starts:  # a field a start did not record reads as empty, or 0 (no real budget, cap or workers is 0)
        last = starts[-1]
        models = list(dict.fromkeys(s.model for s in starts if s.model))
        boxes = list(dict.fromkeys(s.sandbox for s in starts if s.sandbox))
        return RunSettings(", then ".join(models) or None, last.budget or None, last.max_episodes or None,
                           last.workers or None, len(starts), verify, settle, f"{EVENT_LOG} (run_started)",
                           last.reviewer_model, last.reviews or None, last.isolation or None, in_row,
                           ", then ".join(boxes) or None)
    published = _published(memory)
    if published:
        solve, coordinator = _table(published, "solve"), _table(published, "coordinator")
        model, reviewer = (value if isinstance(value := coordinator.get(key), str) else None
                           for key in ("model", "reviewer_model"))  # an older coordinator published no reviewer_model
        shown = {key: value if isinstance(value := solve.get(key), str) else None for key in ("reviews", "isolation")}
        return RunSettings(model, _int(solve.get("budget")), _int(solve.get("max_episodes")), None, 0, verify, settle,
                           "the coordinator's published settings", reviewer, shown["reviews"], shown["isolation"],
                           in_row)
    return RunSettings(None, None, None, None, 0, verify, settle, "not recorded", in_row=in_row)


def _starts(log: Path) -> list[RunStarted]:
    """Every `run_started` event. A long run's log is tens of megabytes, of which these are a
    few lines: the file is searched for them as bytes, and only their lines are decoded."""
    try:
        with log.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return [event for line in _lines_with(data, b'"run_started"')
                    if isinstance(event := read_line(line), RunStarted)]
    except (FileNotFoundError, ValueError):  # no log, or an empty one (which mmap refuses)
        return []


def _lines_with(data: mmap.mmap, word: bytes) -> list[bytes]:
    """The lines of `data` that hold `word`, in order."""
    lines, at = [], data.find(word)
    while at >= 0:
        start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        end = len(data) if end < 0 else end
        lines.append(data[start:end])
        at = data.find(word, end)
    return lines


def _published(memory: Memory) -> dict:
    """The settings a coordinator published, of any run protocol (older runs read too); {} for
    a local run, which publishes none."""
    from gitswarm.memory.errors import NotARun
    from gitswarm.remote.published import published

    try:
        settings = memory.snapshot().read_with(published)
    except (NotARun, json.JSONDecodeError):
        return {}
    return settings if isinstance(settings, dict) else {}


def _table(settings: dict, key: str) -> dict:
    found = settings.get(key)
    return found if isinstance(found, dict) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
