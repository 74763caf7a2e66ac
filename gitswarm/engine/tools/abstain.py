"""`abstain`, the final action that ends the episode with nothing to commit, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.core.status import Status
from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Text, ToolArgs
from gitswarm.engine.tools.tool import Final, Tool

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class Abstain(ToolArgs):
    reason: Text


async def abstain(box: Toolbox, args: Abstain) -> Final:
    return Final(Status.ABSTAIN, reason=args.reason.strip()[:500])


TOOL = Tool(ToolName.ABSTAIN, Abstain, abstain)
