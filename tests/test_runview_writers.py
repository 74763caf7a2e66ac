"""`RunView` (what every step's header shows) is written through one method per fact, so who
writes what can be found by name: no module assigns its fields."""

from __future__ import annotations

import re
from pathlib import Path

import gitswarm
from gitswarm.engine.runview import RunView

FACTS = "charged|tokens|cost|cost_known|settled|verified|episodes|set_aside|announcements|running|problems"
WRITE = re.compile(rf"\bview\.({FACTS})\s*(\[[^]]*\])?\s*(=|\+=|-=|\|=)(?!=)"
                   rf"|\bview\.(settled|verified|set_aside|announcements|running)\.(add|update|discard|remove|pop|clear)\(")


def test_no_module_assigns_a_fact_of_the_view():
    found = []
    for path in Path(gitswarm.__file__).parent.rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if WRITE.search(line.split("#")[0]):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert found == []


def test_each_fact_has_its_writer(tmp_path: Path):
    view = RunView(["a", "b"])
    view.counted(charged=3, episodes=5)
    view.spent(1200, 0.25, False)
    view.settle({"a"}, {"a", "b"})
    view.put_aside({"b"})
    view.announce("w01", "a: try a smaller case")
    view.announce("w02", "b: check the proof")
    view.announce("w02", None)
    view.working("w01", "e1", "a", 2)
    view.working("w02", "e2", "a", 0)
    view.announce("w02", "a: review")
    view.finished("w02")
    assert (view.charged, view.episodes) == (3, 5)
    assert (view.tokens, view.cost, view.cost_known) == (1200, 0.25, False)
    assert (view.settled, view.verified, view.set_aside) == ({"a"}, {"b"}, {"b"})
    assert view.running == {"w01": ("e1", "a", 2)}
    assert view.announcements == {"w01": "a: try a smaller case"}
