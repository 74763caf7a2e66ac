"""The dashboard and the core load no engine module: the views read records, they never
reach into the engine (a fresh interpreter, so that other tests' imports do not count)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def loaded_after(module: str) -> list[str]:
    """The gitswarm modules a fresh interpreter holds after importing `module`."""
    code = (
        f"import json, sys, {module}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('gitswarm.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("module", ["gitswarm.tui.app", "gitswarm.core.control", "gitswarm.core.stops"])
def test_views_and_core_load_no_engine(module: str):
    loaded = loaded_after(module)
    assert module in loaded
    assert [m for m in loaded if m.startswith("gitswarm.engine")] == []


def test_core_loads_nothing_of_gitswarm_beyond_itself():
    loaded = loaded_after("gitswarm.core.control, gitswarm.core.stops, gitswarm.core.events")
    assert [m for m in loaded if not m.startswith("gitswarm.core")] == []
