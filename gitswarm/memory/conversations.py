"""Read the lossless records of episodes' conversations back from their books: the run's own
(`refs/gitswarm/conversations`) and each remote worker's as pushed. `engine.conversation`
writes them and states their contract; the export reads them here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gitswarm.memory import books
from gitswarm.memory.gitdir import GitReader

BOOK = "conversations"
CONVERSATIONS_REF = books.ref_name(BOOK)
WORKERS = "refs/gitswarm/workers/"
"""Where a remote's workers push their books (`remote.layout.WORKERS`)."""


def path_of(episode: str) -> str:
    """The record's file in the book."""
    return f"episodes/{episode[:4]}/{episode}.json"


def read_conversation(repo: GitReader, episode: str) -> dict[str, Any] | None:
    """The episode's record (the contract's form), or None: an episode of an older run, or
    one that never ran."""
    path = path_of(episode)
    for book in _preferred(repo, _books(repo), episode):
        found = repo.record(book, path)
        if isinstance(found, dict):
            return restored(found)
    return None


def all_conversations(repo: GitReader) -> Iterator[dict[str, Any]]:
    """Every episode's record, in episode order, each once."""
    found: dict[str, dict[str, dict[str, Any]]] = {}  # episode -> book -> stored record
    for book in _books(repo):
        for record in repo.records(book, "episodes").values():
            if isinstance(record, dict) and isinstance(record.get("episode"), str):
                found.setdefault(record["episode"], {})[book] = record
    for episode in sorted(found):
        held = found[episode]
        book = next(b for b in _preferred(repo, list(held), episode) if b in held)
        yield restored(held[book])


def restored(record: dict[str, Any]) -> dict[str, Any]:
    """A stored record with every call's whole list of messages (`CallLog.delta` undone)."""
    calls: list[dict[str, Any]] = []
    before: list[dict[str, Any]] = []
    for call in record.get("calls", []):
        request = dict(call["request"])
        messages = before[:request.pop("kept", 0)] + request["messages"]
        calls.append({**call, "request": {**request, "messages": messages}})
        before = messages
    return {**record, "calls": calls}


def _books(repo: GitReader) -> list[str]:
    """The books that hold records here (names under refs/gitswarm/): the run's, then each
    remote worker's as pushed."""
    own = [BOOK] if repo.ref(CONVERSATIONS_REF) is not None else []
    pushed = sorted(r for r in repo.refs(WORKERS) if r.endswith(f"/gitswarm/{BOOK}"))
    return own + [r.removeprefix("refs/gitswarm/") for r in pushed]


def _preferred(repo: GitReader, found: list[str], episode: str) -> list[str]:
    """`found` with the run's book first, then the book of the worker the run's ledger says
    closed the episode: a worker whose claim was taken over may have pushed a record too."""
    if len(found) < 2:
        return found
    ledger = repo.record("ledger", path_of(episode))
    process = ledger.get("process") if isinstance(ledger, dict) else None
    closer = f"{WORKERS.removeprefix('refs/gitswarm/')}{process}/gitswarm/{BOOK}" if process else None
    return sorted(found, key=lambda book: (book != BOOK, book != closer))
