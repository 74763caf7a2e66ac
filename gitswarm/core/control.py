"""How the outside (CLI, dashboard) steers a run."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio


@dataclass
class Control:
    """How the outside (CLI, dashboard) steers a run: a graceful stop and a pause."""

    stop: anyio.Event = field(default_factory=anyio.Event)
    paused: bool = False
