"""Events are typed records: `core.events.Event` names every kind the engine emits, each
emitter builds a record (never a kind string and loose fields), every record reads back from
its line as it was, an older or newer line reads without an error, and the dashboard handles
or deliberately ignores every kind."""

from __future__ import annotations

import ast
import json
import types
from dataclasses import fields
from pathlib import Path
from typing import Union, get_args, get_origin, get_type_hints

import pytest
from demo_run import demo_run

import gitswarm
from gitswarm.cli.progress import line
from gitswarm.core import event_types, remote_events
from gitswarm.core.event_types import Committed, Failed, Merged, Record, RunStopped, Selected, Step
from gitswarm.core.events import KINDS, Known, Unknown, data_of, event_of, read_line, to_line
from gitswarm.engine.events import read_events
from gitswarm.tui import reducer
from gitswarm.tui.state import DashState

PACKAGE = Path(gitswarm.__file__).parent


def records() -> set[type]:
    """Every record class the two event modules define with a kind of its own."""
    found = set()
    for module in (event_types, remote_events):
        found |= {c for c in vars(module).values()
                  if isinstance(c, type) and issubclass(c, Record) and "kind" in vars(c)
                  and isinstance(vars(c)["kind"], str)}
    return found


def sample(record: type, optional: bool = True) -> Known:
    """An instance of `record` with a value in every field (None in the optional ones unless `optional`)."""
    hints, values = get_type_hints(record), {}
    for each in fields(record):
        kind = hints[each.name]
        if get_origin(kind) in (Union, types.UnionType):
            if not optional:
                values[each.name] = None
                continue
            kind = next(k for k in get_args(kind) if k is not type(None))
        values[each.name] = {str: f"{each.name}-x", int: 3, float: 1.5, bool: True}.get(kind, ["a", "b"])
    return record(**values)


def test_the_union_names_every_record_and_each_kind_once():
    assert set(get_args(Known)) == records()
    assert len(KINDS) == len(get_args(Known)) == 39
    assert set(event_types.ENDED.values()) <= set(KINDS.values())


def test_every_emitter_builds_a_record():
    """No `emit("kind", field=...)` is left: each emit call gets one record (or a variable holding one)."""
    loose = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("emit", "_emit")
                    and (len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Constant))):
                loose.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert loose == []


@pytest.mark.parametrize("record", sorted(records(), key=lambda r: r.kind), ids=lambda r: r.kind)
def test_every_kind_reads_back_from_its_line(record: type):
    for event in (sample(record), sample(record, optional=False)):
        said = to_line(event)
        assert json.loads(said)["kind"] == record.kind
        assert read_line(said) == event
        assert read_line(said.encode()) == event


def test_the_line_is_the_format_the_log_always_had():
    event = Committed(episode="e1", worker="w01", problem="p", commit=None, note="", tokens=3, charged=1, time=5.0)
    assert json.loads(to_line(event)) == {"kind": "committed", "time": 5.0, "data": {
        "episode": "e1", "worker": "w01", "problem": "p", "commit": None, "note": "", "tokens": 3, "charged": 1}}
    none = Selected(problem="p", path=None, nominations=0, verified=None, time=1.0)  # said as null: no default
    assert data_of(none) == {"problem": "p", "path": None, "nominations": 0, "verified": None}


def test_an_older_or_newer_line_reads_without_an_error():
    old = read_line('{"kind": "run_stopped", "data": {"reason": "budget"}, "time": 2}')  # before detail and counts
    assert old == RunStopped(reason="budget", detail="", charged=0, episodes=0, tokens=0, time=2.0)
    assert event_of("step", {"episode": "e1", "step": 2.0, "said_later": 1}, 3.0) == Step(
        episode="e1", worker="", problem="", step=2, tokens=0, time=3.0)  # a field it does not know: dropped
    assert event_of("merged", {"commit": "c"}, 1.0) == Merged(commit="c", episodes=[], parents=0, time=1.0)
    assert event_of("failed", {"episode": "e1"}, 1.0) == Failed(
        episode="e1", worker="", problem="", commit=None, note="", tokens=0, charged=0, time=1.0)
    assert read_line('{"kind": "moved_on", "data": {"x": 1}, "time": 4}') == Unknown("moved_on", {"x": 1}, 4.0)
    assert read_line('{"kind": "step", "data": {"step": "two"}, "time": 4}') == Unknown("step", {"step": "two"}, 4.0)
    assert read_line(to_line(Unknown("moved_on", {"x": 1}, 4.0))) == Unknown("moved_on", {"x": 1}, 4.0)
    for cut in ('{"kind": "step", "da', "", "[]", '{"data": {}, "time": 1}', b"\xff"):
        assert read_line(cut) is None


def test_the_dashboard_handles_or_ignores_every_kind():
    handled, ignored = set(reducer.HANDLERS), set(reducer.IGNORED)
    assert handled | ignored == set(KINDS.values()) and not handled & ignored
    state = DashState()
    state.apply([sample(r) for r in sorted(records(), key=lambda r: r.kind)] + [Unknown("moved_on", {}, 1.0)])
    assert state.events == len(records()) + 1


def test_the_progress_printer_takes_every_kind():
    said = {r.kind: line(sample(r, optional=False), 10) for r in records()}
    assert said["failed"] == "episode-x worker-x failed on problem-x (?): note-x"
    assert line(Failed(episode="e1", worker="w01", problem="p", commit=None, note="n", tokens=0, charged=0,
                       failure="provider"), 10) == "e1 w01 failed on p (provider): n"
    assert said["reply"] is None and said["pruned"] is None


def test_every_event_of_a_run_reads_as_its_kind(tmp_path_factory: pytest.TempPathFactory):
    events = read_events(demo_run(tmp_path_factory))
    assert events and [e for e in events if isinstance(e, Unknown)] == []
    assert {"run_started", "episode_started", "step", "tool", "reply", "committed", "merged", "selected",
            "run_stopped"} <= {e.kind for e in events}


def test_an_event_reaches_the_log_within_the_flush_window_while_the_loop_runs(tmp_path: Path):
    """The engine's events are written in one go per `FLUSH_S` on the loop: a dashboard in
    another terminal (`LogTail`) sees each within that time, before the run ends; and an error
    logged, or the log closed, writes what is waiting first."""
    import anyio

    from gitswarm.engine.events import FLUSH_S, EventLog
    from gitswarm.tui.tail import LogTail

    step = Step(episode="e01-000", worker="w01", problem="p", step=1, tokens=10)
    log, follower = EventLog(tmp_path), LogTail(tmp_path)
    seen: list[list] = []

    async def run() -> None:
        log.emit(step)
        log.emit(step)
        await anyio.sleep(FLUSH_S * 3)
        seen.append(follower.read())
        log.emit(step)
        log.log_error("the engine failed", RuntimeError("boom"))  # a crash's record: the events first
        seen.append(follower.read())
        log.emit(step)

    anyio.run(run)
    assert seen == [[step, step], [step]]
    log.close()
    assert follower.read() == [step]
    log = EventLog(tmp_path)
    log.emit(step)  # no loop running (a command): written at once
    assert follower.read() == [step]
    log.close()
