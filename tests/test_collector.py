"""The garbage collector over a run's loop (engine/collector.py): what is alive as the loop
starts is out of the collector's passes while it runs, what the loop makes is collected as
before, and everything is given back to the collector when the loop ends."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import anyio
from demo_run import run_demo


class Node:
    """A tracked object that can be made into a cycle (garbage only the collector frees)."""

    def __init__(self) -> None:
        self.me = self


def garbage_cycle() -> weakref.ref[Node]:
    """A cycle no one holds; a weak reference to tell whether the collector freed it."""
    return weakref.ref(Node())


def test_what_lives_as_the_loop_starts_is_left_out_of_collections_until_it_ends(tmp_path: Path):
    assert gc.get_freeze_count() == 0
    held = [Node()]  # alive as the run starts
    before = weakref.ref(held[0])
    seen: dict[str, object] = {}

    def listener(event) -> None:
        if event.kind == "episode_started" and not seen:
            seen["frozen"] = gc.get_freeze_count()
            held.clear()  # garbage now, but out of the collector's sight
            made = garbage_cycle()
            gc.collect()
            seen["before kept"] = before() is not None
            seen["made freed"] = made() is None

    anyio.run(lambda: run_demo(tmp_path / "run", listeners=[listener], workers=3, budget=6))
    assert seen["frozen"] > 10_000  # the modules, litellm's tables, the run's records
    assert seen["before kept"] and seen["made freed"]
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before() is None
