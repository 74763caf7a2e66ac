"""`write_file`: stage a file of the contribution (or add to one), where the episode's role may
write, within the memory's limits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Flag, Text, ToolArgs, ToolError
from gitswarm.engine.tools.tool import Tool
from gitswarm.memory.errors import PathRejected
from gitswarm.memory.paths import check_path
from gitswarm.resources import render

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class WriteFile(ToolArgs):
    path: Text
    content: Text
    append: Flag = False


async def write_file(box: Toolbox, args: WriteFile) -> str:
    rel, content, limits = box.relative(args.path), args.content, box.memory.limits
    if args.append:
        content = box.staged.get(rel, "") + content
    if rel.startswith("nominations/"):
        raise ToolError(f"nominations are made with the {ToolName.NOMINATE} action, not written")
    if not box.ep.may_write(rel):
        raise ToolError(render("write_refused.md.j2", path=rel, review=box.ep.review is not None,
                               folders=box.ep.powers.writes).strip())
    try:
        check_path(rel, limits)
    except PathRejected as exc:
        raise ToolError(exc.reason) from None
    size = len(content.encode("utf-8"))  # `args` refused a lone surrogate
    if "\x00" in content:
        raise ToolError("the content contains NUL characters; write text")
    if size > limits.max_file_bytes:
        raise ToolError(f"the file is larger than {limits.max_file_bytes} bytes")
    if rel not in box.staged and len(box.staged) >= limits.max_files:
        raise ToolError(f"at most {limits.max_files} files in one contribution")
    box.staged[rel] = content
    box.deleted.discard(rel)
    return f"staged {rel} ({len(content)} characters); {len(box.staged)} file(s) staged"


TOOL = Tool(ToolName.WRITE_FILE, WriteFile, write_file)
