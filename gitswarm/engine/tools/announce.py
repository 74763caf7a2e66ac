"""`announce`: tell the other workers, in one line, what this episode works on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Text, ToolArgs
from gitswarm.engine.tools.tool import Tool

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class Announce(ToolArgs):
    intent: Text


async def announce(box: Toolbox, args: Announce) -> str:
    problem = box.ep.problem_id
    said = args.intent.strip().removeprefix(f"{problem}:").strip()  # the prefix once
    box.view.announce(box.ep.worker, f"{problem}: {said[:160]}")
    return "announced"


TOOL = Tool(ToolName.ANNOUNCE, Announce, announce)
