"""`shell`: a bash command in the episode's code tree (`engine.shell`, `engine.workspace`), whose
changes become staged files and deletions; offered on code problems alone (`plan.CODE_TOOLS`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from gitswarm.engine.plan import ToolName
from gitswarm.engine.shell import DEFAULT_TIMEOUT
from gitswarm.engine.tools.args import Text, ToolArgs, ToolError, Whole
from gitswarm.engine.tools.tool import Tool, sandbox_faults

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class RunShell(ToolArgs):
    command: Text
    timeout: Whole = Field(DEFAULT_TIMEOUT, ge=1, le=600)


async def shell(box: Toolbox, args: RunShell) -> str:
    if not args.command.strip():
        raise ToolError("give a bash command")
    with sandbox_faults(ToolName.SHELL):
        done = await box.code.run(args.command, args.timeout, box.staged, box.deleted, await box.hide(), box.at)
    box.staged, box.deleted = done.staged, done.deleted
    return done.text


TOOL = Tool(ToolName.SHELL, RunShell, shell)
