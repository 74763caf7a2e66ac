"""The header line: run, model, elapsed, episodes, in flight, tokens, USD."""

from __future__ import annotations

import time

from textual.widgets import Static

from gitswarm.tui.rows import RESTING
from gitswarm.tui.state import DashState


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def header_text(state: DashState, now: float | None = None) -> str:
    """The header as plain text (two short lines fit 80 columns)."""
    h = state.header
    if h.started is None and not h.stopped:
        return f"-  [{h.waiting}]\nno episode has started yet"
    in_flight = sum(w.state not in RESTING for w in state.workers.values())
    elapsed = _elapsed(h.earlier + (h.ended or now or time.time()) - h.started) if h.started else "-"
    usd = "unknown (no price)" if h.cost is None else f"{h.cost:.4f}"
    cap = "" if h.max_usd is None else f" of {h.max_usd:.2f} cap"
    status = f"stopped: {h.stopped}" if h.stopped else ("PAUSED" if h.paused else "running")
    return (f"{elapsed}  [{status}]  run {h.run}  model {h.model}\n"
            f"episodes {h.charged}/{h.budget}  in flight {in_flight}/{h.workers}  "
            f"tokens {h.tokens:,}  USD {usd}{cap}")


class RunHeader(Static):
    """Two lines of run totals."""

    DEFAULT_CSS = """
    RunHeader { height: 2; background: $boost; color: $text; padding: 0 1; text-wrap: nowrap;
                text-overflow: ellipsis; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)

    def show(self, state: DashState) -> None:
        self.update(header_text(state))
