"""Which tools an episode has, derived from its role: every tool by name (`TOOLS`, one module
each), each role's (`of_role`: the names of `plan.POWERS`, `contribute` with the role's model)
and an episode's (`of_episode`: the names of `EpisodePlan.tools`). The schemas it is offered
(`specs`) and what its calls run (`Toolbox.call`) both come from here."""

from __future__ import annotations

from functools import cache
from typing import Any

from gitswarm.engine.plan import POWERS, EpisodePlan, Role, ToolName
from gitswarm.engine.tools import (
    abstain,
    announce,
    contribute,
    in_flight,
    list_items,
    nominate,
    read_file,
    run_python,
    search,
    shell,
    write_file,
)
from gitswarm.engine.tools.tool import Tool

TOOLS: dict[ToolName, Tool[Any]] = {tool.name: tool for tool in (
    list_items.TOOL, read_file.TOOL, search.TOOL, in_flight.TOOL, announce.TOOL, write_file.TOOL, run_python.TOOL,
    shell.TOOL, contribute.BY_ROLE[Role.WORKER], nominate.TOOL, abstain.TOOL)}
"""Every tool, by name, as a worker has it."""


@cache
def of_role(role: Role) -> dict[ToolName, Tool[Any]]:
    """The tools of `role`, in the order they are offered, `contribute` with the role's model."""
    return {name: contribute.BY_ROLE[role] if name is ToolName.CONTRIBUTE else TOOLS[name]
            for name in POWERS[role].tools}


def of_episode(ep: EpisodePlan) -> dict[ToolName, Tool[Any]]:
    """The tools of the episode `ep`, by name: those its plan offers (`EpisodePlan.tools`)."""
    mine = of_role(ep.role)
    return {name: mine[name] for name in ep.tools}
