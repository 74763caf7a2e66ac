"""`nominate`, the final action that names the candidate this episode would select, with its
rationale, as a nomination file of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitswarm.core.status import Status
from gitswarm.domain.kinds import Kind
from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Text, ToolArgs, ToolError
from gitswarm.engine.tools.tool import Final, Tool

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class Nominate(ToolArgs):
    candidate: Text
    rationale: Text


async def nominate(box: Toolbox, args: Nominate) -> Final:
    candidate, rationale = args.candidate, args.rationale
    found = box.index.resolve(box.ep.problem_id, candidate)
    if found is None:
        raise ToolError(f"no attempt or program {candidate!r} of this problem in the memory; "
                        "give its path (attempts/... or code/...) or commit id")
    commit, path = found
    text = f"---\ncandidate: {commit}\npath: {path}\n---\n\n{rationale.strip()}\n"
    files = {f"nominations/{box.ep.episode}.md": text}
    return Final(Status.NOMINATE, box.contribution(Kind.NOMINATION, f"nominate {path}", rationale, files, [commit],
                                                   "", candidate=commit))


TOOL = Tool(ToolName.NOMINATE, Nominate, nominate)
