"""`search`: the lines of the problem's own files (its statement, documentation and starter
files), its summary and its newest items that hold a word or phrase, in one git-thread call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.engine import context
from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Text, ToolArgs, ToolError
from gitswarm.engine.tools.tool import Tool
from gitswarm.resources import render

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox

SEARCH_ITEMS = 2000
"""Items one search reads, newest first: a bound on the git thread's time for one call."""
SEARCH_HITS = 40


class Search(ToolArgs):
    query: Text


async def search(box: Toolbox, args: Search) -> str:
    needle = args.query.lower().strip()
    if not needle:
        raise ToolError("give a non-empty query")
    items = list(box.index.problems[box.ep.problem_id].items)
    paths = ["SUMMARY.md", *reversed(items[-SEARCH_ITEMS:])]  # newest first
    hits = await box.store.run(_search_all, box, paths, needle)
    text = "\n".join(hits) or "no matches"
    if len(items) > SEARCH_ITEMS:
        text += (f"\n(searched the newest {SEARCH_ITEMS} of {len(items)} items; {ToolName.LIST_ITEMS} with an "
                 "offset reaches the older ones)")
    return render("tool_result.md.j2", fenced=True, source="search results", text=text)


def _search_all(box: Toolbox, items: list[str], needle: str) -> list[str]:
    """`_search` over the problem's own files (its statement, documentation and starter
    files), then `items` (git thread)."""
    own = [f["path"] for f in context.own_files(box.memory, box.ep.problem_id, box.at)]
    return _search(box, ["statement.md", *own, *items], needle)


def _search(box: Toolbox, paths: list[str], needle: str) -> list[str]:
    """Lines containing `needle`, up to SEARCH_HITS; one git-thread call, not one per file."""
    hits: list[str] = []
    for path in paths:
        data = box.memory.read_file(f"{box.base}/{path}", box.at)
        for n, line in enumerate((data or b"").decode("utf-8", "replace").splitlines(), 1):
            if needle in line.lower():
                hits.append(f"{path}:{n}: {line.strip()[:200]}")
                if len(hits) >= SEARCH_HITS:
                    return hits
    return hits


TOOL = Tool(ToolName.SEARCH, Search, search)
