"""`list_items`: the items of the episode's problem in the step's view, a codebase as one item,
each with its commit, its citations, whose and how new it is, and a candidate's reviews."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from gitswarm.domain.kinds import CANDIDATE_FOLDERS, CONTRIBUTION_KINDS, Kind, candidate_path
from gitswarm.engine import context
from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import AS_TEXT, OneOf, ToolArgs, Whole
from gitswarm.engine.tools.tool import Tool

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox

ITEM_KINDS = tuple(k for k in Kind if k in CONTRIBUTION_KINDS and k != Kind.SUMMARY)
"""The kinds `list_items` filters by: what an episode writes, but the one SUMMARY.md."""
PAGE = 100


class ListItems(ToolArgs):
    kind: Annotated[str, OneOf(ITEM_KINDS), AS_TEXT] | None = None
    offset: Whole = Field(0, ge=0)


async def list_items(box: Toolbox, args: ListItems) -> str:
    kind, offset = args.kind, args.offset
    rows = [_row(box, path, commit, files) for path, commit, files in _listed(box)
            if kind is None or path.startswith(f"{kind}s/") or (kind == Kind.CODE and path.startswith("code/"))]
    page = rows[offset: offset + PAGE]
    more = f"\n... {len(rows) - offset - PAGE} more: call again with offset={offset + PAGE}"
    return "\n".join(page) + (more if len(rows) > offset + PAGE else "") if page else "no items"


def _listed(box: Toolbox) -> list[tuple[str, str, int]]:
    """(path, commit, files) of the problem's items, oldest first, a codebase `code/<slug>` as
    one item (the commit that wrote it last, and how many files it holds)."""
    problem = box.ep.problem_id
    codebases = box.index.candidates(problem)
    found: dict[str, tuple[str, str, int]] = {}
    for path, commit in box.index.problems[problem].items.items():
        key = candidate_path(path)
        if key.startswith("code/"):
            files = found[key][2] + 1 if key in found else 1
            found[key] = (key, codebases.get(key, commit), files)
        else:
            found[key] = (path, commit, 1)
    return list(found.values())


def _row(box: Toolbox, path: str, commit: str, files: int) -> str:
    """One item: its commit, citations, and whose and how new it is; a candidate's counted
    reviews."""
    index, ep = box.index, box.ep
    author = index.authors.get(commit) or "?"
    marks = [f"{files} files" if path.startswith("code/") else "",
             f"by {author}" + (" (yours)" if author == ep.worker else ""),
             index.mark(commit), "new since your episode started" if box.new_since_start(commit) else ""]
    if path.startswith(CANDIDATE_FOLDERS):
        marks.append("reviews: " + context.reviews_text(index, ep.problem_id, commit))
    shown = "; ".join(m for m in marks if m)
    return f"{path}  commit {commit[:12]}  cited by {index.cited[commit]}" + (f"  ({shown})" if shown else "")


TOOL = Tool(ToolName.LIST_ITEMS, ListItems, list_items)
