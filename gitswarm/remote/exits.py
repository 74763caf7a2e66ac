"""A worker's mark that it has left a run that goes on.

A worker process that ends while the run still runs (its user stopped it, its time limit,
its model failing, its pushes refused) pushes one commit to its own ref
`refs/gitswarm/workers/<name>/gitswarm/exited`, holding `exit.json` (why, and when). The
coordinator's mirror fetches it with the worker's other refs, so `status`, the report and
the dashboard say `exited` rather than `idle` for a process that will not come back on its own.

A worker started again under the same name deletes its mark as it joins. If that delete is
lost (the remote unreachable for a moment), the mark still stops counting as soon as the
worker pushes results: a mark older than the worker's last push is a past exit
(`Exit.after`). The mark is a courtesy to readers, never a condition of the run: a push that
fails is told once and the worker ends as it would have.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from gitswarm.core.stops import Stop
from gitswarm.memory.gitdir import GitReader
from gitswarm.remote import layout
from gitswarm.remote.errors import RemoteError
from gitswarm.remote.transport import Remote, Update

EXITED = "refs/gitswarm/exited"
"""The worker's local name of its mark; on the remote, `layout.worker_ref(name, EXITED)`."""


@dataclass(frozen=True)
class Exit:
    """A worker's mark: why it left, and when (seconds since the epoch)."""

    reason: str
    detail: str
    at: int

    def after(self, pushed: int) -> bool:
        """Whether this mark is the worker's latest word: no push of results since."""
        return self.at >= pushed


def mark(remote: Remote, name: str, why: Stop | BaseException) -> str | None:
    """Push `name`'s mark with `why` (the worker's stop, or the error it ends on). Returns None
    when pushed, else what went wrong, for the worker to tell its user."""
    reason, detail = (why.reason.value, why.detail) if isinstance(why, Stop) else (type(why).__name__, str(why))
    data = json.dumps({"reason": reason, "detail": detail, "at": int(time.time())}).encode()
    commit = remote.gitdir().commit({"exit.json": data}, f"gitswarm: worker {name} left the run: {detail}\n")
    ref = layout.worker_ref(name, EXITED)
    try:
        remote.push([Update(ref, commit, remote.local(ref))])
    except RemoteError as exc:
        return str(exc)
    return None


def clear(remote: Remote, name: str) -> None:
    """Delete `name`'s mark, as a worker under that name joins (the mirror was just fetched
    with its refs). A failed delete is harmless: the mark lapses at the worker's next push."""
    ref = layout.worker_ref(name, EXITED)
    there = remote.local(ref)
    if there is None:
        return
    try:
        remote.push([Update(ref, None, there)])
    except RemoteError:
        return


def read_exits(repo: GitReader) -> dict[str, Exit]:
    """Every worker's mark in `repo` (a coordinator's mirror, or a clone of the remote), by name."""
    found = {}
    suffix = EXITED.removeprefix("refs")
    for ref in repo.refs(layout.WORKERS):
        tip = repo.ref(ref) if ref.endswith(suffix) else None
        if tip is None:
            continue
        text = repo.file(tip, "exit.json")
        try:
            data = json.loads(text) if text is not None else None
        except ValueError:
            data = None  # not a mark this version wrote: the worker is read as if unmarked
        if not isinstance(data, dict):
            continue
        found[ref.removeprefix(layout.WORKERS).removesuffix(suffix)] = Exit(
            str(data.get("reason", "")), str(data.get("detail", "")), int(data.get("at", 0)))
    return found
