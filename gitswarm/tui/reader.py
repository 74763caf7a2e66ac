"""Read-only views of a run repository for the dashboard (run in a worker thread).

Each periodic read is the run's read model (`gitswarm.readmodel`), the same that `status` and
the report show; the history is read only for one problem on demand. Never writes to the run.
"""

from __future__ import annotations

from pathlib import Path

from gitswarm.memory.model import CommitInfo
from gitswarm.readmodel.model import RunState


def open_memory(run: Path):
    from gitswarm.memory.repo import Memory

    return Memory(run)


def snapshot(memory) -> RunState:
    """The run's read model: each problem's state, counts, selection and grade, and the totals."""
    from gitswarm.readmodel.read import read_run

    return read_run(memory)


def history(memory, problem: str, limit: int = 200) -> list[CommitInfo]:
    """The commits touching a problem, newest first (main and unmerged branches)."""
    return memory.log(problem=problem, include_pending=True, limit=limit)


def item_markdown(memory, commit: CommitInfo) -> str:
    """A commit as Markdown: its message, then the files it added or changed."""
    import pygit2

    repo = memory.repo
    new = repo.revparse_single(commit.id).peel(pygit2.Commit)
    parts = [f"# {commit.subject}", f"`{commit.id[:12]}` by **{commit.author}**, kind *{commit.kind or '-'}*"]
    if commit.body:
        parts.append(commit.body)
    if commit.informed_by:
        parts.append("Informed by: " + ", ".join(f"`{c[:10]}`" for c in commit.informed_by))
    old = new.parents[0].tree if new.parents else None
    diff = repo.diff(old, new.tree) if old is not None else new.tree.diff_to_tree(swap=True)
    for patch in list(diff)[:8]:
        path = patch.delta.new_file.path
        blob = memory.read_file(path, commit.id)
        if blob is None:
            continue
        text = blob.decode("utf-8", "replace")[:20_000]
        body = text if path.endswith(".md") else f"```\n{text}\n```"
        parts.append(f"---\n**{path}**\n\n{body}")
    return "\n\n".join(parts)


def graph_text(memory, problem: str) -> str:
    """The problem's contribution graph as text: each contribution with what it built on."""
    from gitswarm.report.graph import load

    heads = [memory.main(), *memory.pending().values()]
    graph = load(memory.repo, heads)
    mine = {n.id: n for n in graph.contributions(problem)}
    lines = [f"Contribution graph of {problem}: {len(mine)} contributions", ""]
    for node in reversed(list(mine.values())):
        inherited = sorted(graph.closure(node.parents[0], citations=False) & mine.keys()) if node.parents else []
        cited = [c[:7] for c in node.cited if c in graph.nodes]
        verdict = f" [{node.verdict}]" if node.verdict else ""
        lines.append(f"● {node.id[:7]} {node.kind:8} {node.author:5} {node.subject[:60]}{verdict}")
        if cited:
            lines.append(f"    ↖ cites     {', '.join(cited)}")
        if inherited:
            lines.append(f"    ↑ inherits  {', '.join(c[:7] for c in inherited)}")
    return "\n".join(lines)
