"""`in_flight`: what the other workers are doing now, on this problem and elsewhere (their
announcements)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import ToolArgs
from gitswarm.engine.tools.tool import Tool
from gitswarm.resources import render

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class InFlight(ToolArgs):
    """`in_flight` takes no arguments (any sent are dropped with a note)."""


async def in_flight(box: Toolbox, args: InFlight) -> str:
    problem, worker = box.ep.problem_id, box.ep.worker
    here = box.view.others_on(problem, worker)
    elsewhere = [f"{w}: {a}" for w, a in box.view.announcements.items()
                 if w != worker and not a.startswith(f"{problem}: ")]
    return render("in_flight.md.j2", problem=problem, here=here, elsewhere=elsewhere)


TOOL = Tool(ToolName.IN_FLIGHT, InFlight, in_flight)
