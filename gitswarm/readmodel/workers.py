"""The worker processes of a run on a git remote, as the coordinator's mirror holds them.

Each process pushes under `refs/gitswarm/workers/<name>/`; its ledger book there holds one
record per episode it ran, and the book's last commit is its last push of results. Read
from refs and one tree per worker, never the history.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pygit2

WORKERS = "refs/gitswarm/workers/"
BOOK = "/gitswarm/ledger"


@dataclass(frozen=True)
class WorkerState:
    """One worker process: its episodes by outcome and the time of its last push."""

    name: str
    episodes: int
    last_push: int
    """Seconds since the epoch of its ledger book's newest commit."""
    outcomes: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"name": self.name, "episodes": self.episodes, "last_push": self.last_push,
                "outcomes": dict(self.outcomes)}


def read_workers(repo: pygit2.Repository) -> list[WorkerState]:
    """Every worker process that pushed a ledger book, by name."""
    found = []
    for ref in sorted(r for r in repo.references if r.startswith(WORKERS) and r.endswith(BOOK)):
        name = ref.removeprefix(WORKERS).removesuffix(BOOK)
        tip = repo[repo.references[ref].target].peel(pygit2.Commit)
        outcomes = Counter(_status(repo, blob) for blob in _records(repo, tip.tree))
        found.append(WorkerState(name, sum(outcomes.values()), tip.commit_time, dict(outcomes)))
    return found


def _records(repo: pygit2.Repository, tree: pygit2.Tree):
    try:
        episodes = repo[tree["episodes"].id]
    except KeyError:
        return
    for folder in episodes:
        for entry in repo[folder.id]:
            yield entry.id


def _status(repo: pygit2.Repository, blob) -> str:
    import json

    return str(json.loads(repo[blob].data).get("status", "?"))
