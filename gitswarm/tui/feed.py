"""The live feed of commits and merges: appended, never rebuilt."""

from __future__ import annotations

import time
from collections.abc import Sequence

from textual.widgets import RichLog

from gitswarm.tui.rows import FeedItem


def feed_line(item: FeedItem) -> str:
    """One feed entry: time, kind, problem, worker, summary, commit, informed-by count."""
    stamp = time.strftime("%H:%M:%S", time.localtime(item.time))
    commit = f" {item.commit[:7]}" if item.commit else ""
    extra = f" ({item.informed_by})" if item.informed_by else ""
    return f"{stamp} {item.kind:10} {item.problem:20} {item.worker:6} {item.summary}{commit}{extra}"


class Feed(RichLog):
    """Newest at the bottom; keeps the last few hundred lines."""

    DEFAULT_CSS = "Feed { border-top: solid $primary; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=500, wrap=False, markup=False, **kwargs)
        self.shown = 0

    def show(self, items: Sequence[FeedItem], total: int) -> None:
        """Append the items added since the last call (`total` counts every item ever added)."""
        fresh = min(total - self.shown, len(items))
        for item in list(items)[len(items) - fresh:]:
            self.write(feed_line(item), scroll_end=False)
        self.shown = total
        if fresh:
            self.call_after_refresh(self.scroll_end, animate=False)
