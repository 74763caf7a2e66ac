"""`read_file`: a file of the episode's problem folder as the step's view holds it (a staged
file as staged), in pages; a folder's path lists its files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from gitswarm.engine import reviewing
from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Text, ToolArgs, ToolError, Whole
from gitswarm.engine.tools.tool import Tool
from gitswarm.resources import render

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox

PAGE = 8000


class ReadFile(ToolArgs):
    path: Text
    offset: Whole = Field(0, ge=0)


async def read_file(box: Toolbox, args: ReadFile) -> str:
    rel, offset, ep = box.relative(args.path), args.offset, box.ep
    if not reviewing.readable(ep, rel):
        raise ToolError(f"{rel}: a blind review reads the problem's own files (statement.md, docs/, starter/) "
                        f"and its candidate, {ep.review.path if ep.review else ''}, alone")
    staged = box.staged.get(rel)
    data = staged.encode() if staged is not None else await box.store.read_file(f"{box.base}/{rel}", box.at)
    if data is None:
        return await _folder(box, rel)
    text = data.decode("utf-8", "replace")
    page = text[offset: offset + PAGE]
    if offset + PAGE < len(text):
        page += f"\n[... {len(text) - offset - PAGE} more characters: read_file offset={offset + PAGE}]"
    return render("tool_result.md.j2", fenced=True, source=f"{box.base}/{rel}", text=page)


async def _folder(box: Toolbox, rel: str) -> str:
    """A folder: the files in it (the view's and those staged), with their sizes; a path that
    is neither is refused, saying how to find what there is."""
    folder = rel.rstrip("/") + "/"
    found = {} if not reviewing.readable(box.ep, folder) else await box.store.run(_sizes, box, folder)
    found |= {p: len(t.encode()) for p, t in box.staged.items() if p.startswith(folder)}
    if not found:
        hint = f"{ToolName.LIST_ITEMS} shows the memory's items" if ToolName.LIST_ITEMS in box.ep.tools else \
            "your first prompt lists the problem's own files"
        raise ToolError(f"no file or folder {rel!r} in problems/{box.ep.problem_id}/ (commit {box.at[:12]}); "
                        f"{ToolName.READ_FILE} on a folder (e.g. docs) lists its files; {hint}")
    rows = "\n".join(f"{path} ({size} bytes)" for path, size in sorted(found.items()))
    return render("tool_result.md.j2", fenced=True, source=f"{box.base}/{folder}", text=rows)


def _sizes(box: Toolbox, folder: str) -> dict[str, int]:
    """The files below `folder` of the problem on the view's commit, by path relative to the
    problem folder, with their sizes (git thread)."""
    memory, base = box.memory, box.base
    paths = memory.files_under(f"{base}/{folder}", box.at)
    return {p.removeprefix(f"{base}/"): len(memory.read_file(p, box.at) or b"") for p in paths}


TOOL = Tool(ToolName.READ_FILE, ReadFile, read_file)
