"""The worker processes of a run on a git remote, as the coordinator's mirror holds them.

Each process pushes under `refs/gitswarm/workers/<name>/`; its ledger book there holds one
record per episode it ran, and the book's last commit is its last push of results. What it
holds now (claims held, claims expired, tokens spent) is the coordinator's count, published
in the run ledger's scheduler record (`spending`). Read from refs, one tree per worker and
that record, never the history.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from gitswarm.memory.snapshot import Snapshot

HEADERS = ("worker", "state", "held", "episodes", "last push", "tokens", "outcomes")
WORKERS = "refs/gitswarm/workers/"
BOOK = "/gitswarm/ledger"


@dataclass(frozen=True)
class WorkerState:
    """One worker process: its episodes by outcome, its last push, what it holds now."""

    name: str
    episodes: int
    """Episodes it pushed a record of."""
    last_push: int
    """Seconds since the epoch of its ledger book's newest commit (0: nothing pushed yet)."""
    outcomes: dict[str, int] = field(default_factory=dict)
    held: int = 0
    """Claims it holds and keeps renewing: episodes it is running."""
    expired: int = 0
    """Claims it held and stopped renewing (it may be gone; others take them over)."""
    tokens: int = 0
    """Tokens its episodes spent, as the coordinator counted them."""
    exited: bool = False
    """The process has left: the run stopped (a worker exits when the run stops), or it marked
    its leaving a run that goes on (`remote/exits.py`)."""
    left: str = ""
    """Why it left a run that goes on, as its mark says ("" without a mark)."""

    @property
    def state(self) -> str:
        """`running`, `silent` (its claims expired: stopped, killed or cut off), `exited` (the
        run stopped and it holds nothing), or `idle`."""
        return "running" if self.held else "silent" if self.expired else "exited" if self.exited else "idle"

    def cells(self) -> tuple[str, ...]:
        """Its line in `status`, the report and the dashboard, under `HEADERS`."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.last_push)) if self.last_push else "-"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())) or "-"
        return (self.name, self.state, str(self.held), str(self.episodes), when, f"{self.tokens:,}", outcomes)

    @classmethod
    def from_dict(cls, data: dict) -> WorkerState:
        """Its `as_dict` form read back (the report renders from its JSON form)."""
        return cls(**{k: v for k, v in data.items() if k != "state"})

    def as_dict(self) -> dict:
        return {"name": self.name, "state": self.state, "episodes": self.episodes, "last_push": self.last_push,
                "outcomes": dict(self.outcomes), "held": self.held, "expired": self.expired, "tokens": self.tokens,
                "exited": self.exited, "left": self.left}


def read_workers(snapshot: Snapshot, scheduler: dict) -> tuple[WorkerState, ...]:
    """Every worker process that pushed a ledger book, marked its leaving, or that the
    coordinator counted, by name; `scheduler` is the run ledger's scheduler record. Once the
    run has stopped (its stop ref holds a stop), a process that holds nothing has exited; before
    that, one whose mark is newer than its last push."""
    from gitswarm.remote.exits import read_exits
    from gitswarm.remote.published import read_stop

    spending = given if isinstance(given := scheduler.get("spending"), dict) else {}
    counted = given if isinstance(given := spending.get("processes"), dict) else {}
    books = {ref.removeprefix(WORKERS).removesuffix(BOOK): ref
             for ref in snapshot.refs(WORKERS) if ref.endswith(BOOK)}
    marks = snapshot.read_with(read_exits)
    found, stopped = [], bool(books or counted) and snapshot.read_with(read_stop) is not None
    for name in sorted({*books, *counted, *marks}):
        live = given if isinstance(given := counted.get(name), dict) else {}
        outcomes: Counter[str] = Counter()
        pushed = 0
        if name in books:
            tip = snapshot.commit(books[name])
            outcomes, pushed = Counter(_status(data) for data in _records(snapshot, tip.tree)), tip.commit_time
        mark = marks.get(name)
        left = mark.detail if mark is not None and mark.after(pushed) else ""
        found.append(WorkerState(name, sum(outcomes.values()), pushed, dict(outcomes), int(live.get("held", 0)),
                                 int(live.get("expired", 0)), int(live.get("tokens", 0)), stopped or bool(left),
                                 left))
    return tuple(found)


def _records(snapshot: Snapshot, tree) -> Iterator[bytes]:
    episodes = snapshot.subtree(tree, "episodes")
    if episodes is not None:
        for _, data in snapshot.files(episodes):
            yield data


def _status(data: bytes) -> str:
    return str(json.loads(data).get("status", "?"))
