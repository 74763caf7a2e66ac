"""Read-only views of a run repository for the dashboard (run in a worker thread).

Each periodic read is the run's read model (`gitswarm.readmodel`), the same that `status` and
the report show, over one index of main (`Snapshots`) kept from read to read, so a read takes in
only the commits main gained since the last. Never writes to the run.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from gitswarm.memory.model import CommitInfo
from gitswarm.readmodel.model import RunState

if TYPE_CHECKING:  # the index is imported by the first read, not with the dashboard
    from gitswarm.domain.index import MemoryIndex


def open_memory(run: Path):
    from gitswarm.memory.repo import Memory

    return Memory(run)


class Snapshots:
    """The run's read model, read again and again over one `MemoryIndex` kept between reads.

    The first read starts from the index kept beside the run (`memory.indexfile`; main's whole
    history when there is none); each later one takes in only the commits main gained since.
    One read at a time: a snapshot worker textual has cancelled may still be reading in its
    thread when the next starts, and the index is not safe to update from two threads."""

    def __init__(self) -> None:
        self._index: MemoryIndex | None = None
        self._lock = threading.Lock()

    def read(self, memory) -> RunState:
        """Each problem's state, counts, selection and grade, and the totals, as main stands now."""
        from gitswarm.readmodel.read import read_run

        with self._lock:
            index = self._index if self._index is not None else memory.snapshot().kept_index()
            self._index = None  # a read that fails part way leaves an index half taken in: start over next time
            state = read_run(memory, index)
            self._index = index
            return state


def history(memory, problem: str, limit: int = 200) -> list[CommitInfo]:
    """The commits touching a problem, newest first (main and unmerged branches)."""
    return memory.log(problem=problem, include_pending=True, limit=limit)


def item_markdown(memory, commit: CommitInfo) -> str:
    """A commit as Markdown: its message, then the files it added or changed."""
    snapshot = memory.snapshot()
    parts = [f"# {commit.subject}", f"`{commit.id[:12]}` by **{commit.author}**, kind *{commit.kind or '-'}*"]
    if commit.body:
        parts.append(commit.body)
    if commit.informed_by:
        parts.append("Informed by: " + ", ".join(f"`{c[:10]}`" for c in commit.informed_by))
    for path in snapshot.touched(commit.id)[:8]:
        blob = snapshot.file(path, commit.id)
        if blob is None:
            continue
        text = blob.decode("utf-8", "replace")[:20_000]
        body = text if path.endswith(".md") else f"```\n{text}\n```"
        parts.append(f"---\n**{path}**\n\n{body}")
    return "\n\n".join(parts)


def graph_text(memory, problem: str) -> str:
    """The problem's contribution graph as text: each contribution with what it built on."""
    from gitswarm.report.graph import load

    graph = load(memory.snapshot())
    mine = {n.id: n for n in graph.contributions(problem)}
    lines = [f"Contribution graph of {problem}: {len(mine)} contributions", ""]
    for node in reversed(list(mine.values())):
        inherited = sorted(graph.closure(node.parents[0], citations=False) & mine.keys()) if node.parents else []
        cited = [c[:7] for c in node.cited if c in graph.nodes]
        verdict = f" [{node.verdict}]" if node.verdict else ""
        lines.append(f"● {node.id[:7]} {node.kind:8} {node.author:5} {node.subject}{verdict}")
        if cited:
            lines.append(f"    ↖ cites     {', '.join(cited)}")
        if inherited:
            lines.append(f"    ↑ inherits  {', '.join(c[:7] for c in inherited)}")
    return "\n".join(lines)


def run_held(run: Path) -> bool | None:
    """Whether some process holds the run's lock (a `solve` at work), read from /proc/locks
    without taking the lock, which would refuse a `solve` starting that instant; None where
    that cannot be told (no lock file yet, no /proc)."""
    import re

    from gitswarm.core.runfiles import LOCK_NAME

    try:
        inode = (Path(run) / LOCK_NAME).stat().st_ino
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    held = re.compile(rf"\bFLOCK\b.*\s[0-9a-f]+:[0-9a-f]+:{inode}\s")
    return any(held.search(line) and "->" not in line for line in table.splitlines())
