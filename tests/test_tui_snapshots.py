"""Snapshot tests of the dashboard's main screen at 80x24 and 120x40 (pytest-textual-snapshot),
on a synthetic event log with fixed times, so the picture is the same on every machine."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitswarm.core.events import Event, event_of, to_line
from gitswarm.tui.app import Dashboard

pytest.importorskip("pytest_textual_snapshot")

T0 = 1_700_000_000.0
PROBLEMS = ["imo-2025-p1", "imo-2025-p2", "aime-2025-i-3", "rev-words"]


def events() -> list[Event]:
    found = [event_of("run_started", {"run": "2026-11-29T2040-imo", "model": "anthropic/claude-opus-4",
                                   "budget": 40, "workers": 6, "charged": 0, "problems": PROBLEMS}, T0)]
    for i in range(12):
        worker, problem, episode = f"w{i % 6 + 1:02d}", PROBLEMS[i % 4], f"e{i + 1:05d}"
        t = T0 + 10 * i
        found += [event_of("episode_started", {"episode": episode, "worker": worker, "problem": problem}, t),
                  event_of("step", {"episode": episode, "worker": worker, "problem": problem, "step": 3}, t + 2),
                  event_of("committed" if i % 3 else "nominated",
                        {"episode": episode, "worker": worker, "problem": problem, "commit": f"{i:02d}" * 20,
                         "tokens": 1000 + i, "charged": i + 1}, t + 5)]
        if i % 4 == 3:
            found.append(event_of("merged", {"commit": f"m{i:02d}" * 13, "episodes": ["a", "b"]}, t + 6))
    found += [event_of("selected", {"problem": PROBLEMS[0], "path": "problems/imo-2025-p1/attempts/a.md"}, T0 + 130),
              event_of("run_stopped", {"reason": "budget of 12 episodes spent", "charged": 12, "tokens": 12066},
                    T0 + 131)]
    return found


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    (tmp_path / "gitswarm-events.jsonl").write_text("".join(to_line(e) + "\n" for e in events()))
    return tmp_path


async def loaded(pilot) -> None:
    while not pilot.app.state.header.stopped:
        await pilot.pause(0.1)
    feed = pilot.app.query_one("#feed")
    while feed.shown < pilot.app.state.feed_total:
        await pilot.pause(0.1)
    await pilot.pause(0.3)
    # A resize redraws every table from scratch, so how the events were split into frames
    # (which varies with the machine's load) cannot show in the picture.
    width, height = pilot.app.size
    await pilot.resize_terminal(width - 1, height)
    await pilot.pause(0.2)
    await pilot.resize_terminal(width, height)
    await pilot.pause(0.2)
    feed.scroll_end(animate=False, immediate=True)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.2)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_main_screen(snap_compare, run: Path, size: tuple[int, int]):
    assert snap_compare(Dashboard(run), terminal_size=size, run_before=loaded)
