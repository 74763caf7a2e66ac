"""What the engine tells the outside world: typed event records, one JSON line each.

`Event` names every kind there is: the records of `core.event_types` (the run, an episode,
the merger) and `core.remote_events` (a run on a git remote), and `Unknown`. The engine's
`EventLog` (`gitswarm.engine.events`) writes them to `EVENT_LOG` in the run's folder as
`{"kind": ..., "data": {field: value, ...}, "time": ...}` (`to_line`) and hands them to its
`Listener`s (the dashboard, the progress printer, the tracer); a reader of the log gets them
back with `read_line`.

A line is read leniently, since logs outlive versions: a field it lacks reads as its type's
zero (None where the field may be None; a count of 0 is "not recorded" where no real count is
0), a field this version does not know is dropped, and a line of an unknown kind or whose
fields do not fit its kind's types is an `Unknown` (kept, shown nowhere), never an error.
"""

from __future__ import annotations

import json
import time
import types
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, Union, get_args, get_origin, get_type_hints

from gitswarm.core import event_types as run
from gitswarm.core import remote_events as remote

if TYPE_CHECKING:
    from pydantic import TypeAdapter

EVENT_LOG = "gitswarm-events.jsonl"
RUN_LOG = "gitswarm.log"
"""Beside the event log: what a user needs to report a bug (an engine error's traceback)."""


@dataclass(frozen=True)
class Unknown:
    """A line this version cannot type: an unknown kind (a newer gitswarm's), or fields that
    do not fit its kind's (`data` as the line has it)."""

    kind: str
    data: dict[str, object] = field(default_factory=dict)
    time: float = field(default_factory=time.time)


Known: TypeAlias = (
    run.RunStarted | run.BudgetShort | run.Settled | run.SetAside | run.Selected | run.WindingDown
    | run.EpisodesCut | run.RunStopped
    | run.EpisodeStarted | run.Step | run.Retry | run.Reply | run.Tool
    | run.Committed | run.Nominated | run.Abstained | run.Failed | run.Stopped
    | run.Merged | run.ConflictResolved | run.Summarised | run.MergerFailed
    | remote.TakenOver | remote.GivenUp | remote.Refused | remote.PublishRefused | remote.StopPublished
    | remote.PruneStale | remote.PruneRefused | remote.Pruned | remote.RemoteUnreachable
    | remote.ExitUnmarked | remote.SkippedOnly | remote.ClaimsLost | remote.PushFailed | remote.Pushed
    | remote.PushAbandoned | remote.ClaimsReleased | remote.PushRefused
)
"""Every kind of event the engine emits: the one list of them."""
Event: TypeAlias = Known | Unknown
"""An event as a listener or a reader of the log gets it."""
KINDS: dict[str, type[Known]] = {kind.kind: kind for kind in get_args(Known)}
"""Each kind's record, by the name the log writes."""

Listener = Callable[[Event], None]


def data_of(event: run.Record | Unknown) -> dict[str, object]:
    """The event's fields but `time`, as the log writes them (an optional field left at None
    is left out)."""
    if isinstance(event, Unknown):
        return dict(event.data)
    found: dict[str, object] = {}
    for name, optional in _written(type(event)):
        value = getattr(event, name)
        if not (value is None and optional):
            found[name] = value
    return found


_WRITTEN: dict[type, tuple[tuple[str, bool], ...]] = {}


def _written(record: type) -> tuple[tuple[str, bool], ...]:
    """The fields of `record` a line holds (all but `time`), each with whether it is left out
    at None; found once a kind (the engine writes several events a model call)."""
    found = _WRITTEN.get(record)
    if found is None:
        found = _WRITTEN[record] = tuple((f.name, f.default is None) for f in fields(record) if f.name != "time")
    return found


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def to_line(event: run.Record | Unknown) -> str:
    """The event as one JSON line (without its newline)."""
    return _ENCODER.encode({"kind": event.kind, "data": data_of(event), "time": event.time})


def read_line(line: str | bytes) -> Event | None:
    """One line of the log as its event; None when it is no event at all (a line cut by a crash)."""
    try:
        found = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(found, dict):
        return None
    kind, data, at = found.get("kind"), found.get("data", {}), found.get("time")
    if not isinstance(kind, str) or not isinstance(data, dict) or not isinstance(at, int | float):
        return None
    return event_of(kind, data, float(at))


def event_of(kind: str, data: dict[str, Any], at: float | None = None) -> Event:
    """The typed event of `kind` with `data` at `at` (now by default), read as a line of the
    log is (the module's docstring)."""
    at = time.time() if at is None else at
    record = KINDS.get(kind)
    if record is None:
        return Unknown(kind, data, at)
    from pydantic import ValidationError

    zeros, adapter = _READERS.get(record) or _reader(record)
    try:
        return adapter.validate_python({**zeros, **{k: v for k, v in data.items() if k in zeros}, "time": at})
    except ValidationError:
        return Unknown(kind, data, at)


_READERS: dict[type[Known], tuple[dict[str, object], TypeAdapter[Known]]] = {}


def _reader(record: type[Known]) -> tuple[dict[str, object], TypeAdapter[Known]]:
    """A record's fields with the zero a line lacking them reads as (None for an optional
    one), and its validator (made on first use: pydantic, lax, so 3.0 reads as an int)."""
    from pydantic import TypeAdapter

    hints = get_type_hints(record)
    zeros = {f.name: f.default if f.default is not MISSING else _zero(hints[f.name])
             for f in fields(record) if f.name != "time"}
    adapter: TypeAdapter[Known] = TypeAdapter(record)
    _READERS[record] = zeros, adapter
    return zeros, adapter


def _zero(kind: object) -> object:
    if get_origin(kind) in (Union, types.UnionType) and type(None) in get_args(kind):
        return None
    if get_origin(kind) is list:
        return []
    return {str: "", int: 0, float: 0.0, bool: False}[kind]  # type: ignore[index]


def running_seconds(times: list[tuple[str, float]]) -> float:
    """How long a run ran, from its events' (kind, time) in order: each start from its
    `run_started` to its `run_stopped`, or to its last event where it crashed, summed; the gaps
    between a stop and the next start do not count. What the dashboard's clock and the
    report's wall time both say."""
    total, began, last = 0.0, None, None
    for kind, at in times:
        if kind == "run_started":
            if began is not None:
                total += max(0.0, (last or began) - began)
            began = at
        elif kind == "run_stopped" and began is not None:
            total += max(0.0, at - began)
            began = None
        last = at
    return total + (max(0.0, last - began) if began is not None and last is not None else 0.0)


def read_times(path: Path) -> list[tuple[str, float]]:
    """The (kind, time) of every event of the log at `path`, in order (a line a crash cut is skipped)."""
    found: list[tuple[str, float]] = []
    if not path.exists():
        return found
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                event = json.loads(line)
                found.append((str(event["kind"]), float(event["time"])))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
    return found


def read_events(path: Path) -> list[Event]:
    """Every event of the log at `path`, in order (a line a crash cut is skipped)."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8", errors="replace") as lines:
        return [event for line in lines if (event := read_line(line)) is not None]
