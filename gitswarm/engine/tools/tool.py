"""What a tool is: its name, its argument model and its handler, tied by one type variable so
that the type checker holds the handler to the model (`Tool`); what a final action returns
(`Final`); and the boundary of the tools that run programs (`sandbox_faults`)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from gitswarm.core.status import Status
from gitswarm.core.stops import Stop
from gitswarm.domain.contribution import Contribution
from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import ToolError
from gitswarm.sandbox import SandboxError

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox

A = TypeVar("A")
"""A tool's arguments: its model (a `ToolArgs`), or what its handler reads of the models that
check it (`contribute`'s `ContributeArgs`, one model per role)."""


@dataclass(frozen=True)
class Final:
    """How an episode ends: `contribute` or `nominate` (with the contribution to commit),
    `abstain`, `failed` (the step limit, the wall clock, replies without tool calls) or
    `stopped` (cut short, or a cap reached: then `stop`, the run's stop it calls for)."""

    action: Status
    contribution: Contribution | None = None
    reason: str = ""
    stop: Stop | None = None


@dataclass(frozen=True)
class Tool(Generic[A]):
    """One tool: `args`, the model its schema is generated from and a call is checked by
    (`args.check`), and `run`, its handler, given the episode's `Toolbox` and the arguments that
    model checked. A text result goes back to the model; a `Final` ends the episode."""

    name: ToolName
    """Its name, and the key of its texts in prompts/tools.yaml."""
    args: type[A]
    run: Callable[[Toolbox, A], Awaitable[str | Final]]


@contextlib.contextmanager
def sandbox_faults(tool: ToolName) -> Iterator[None]:
    """The one boundary for faults of the sandbox in the tools that run programs: the model
    reads that the machine, not its program, failed (never an engine error of the episode)."""
    try:
        yield
    except SandboxError as exc:
        raise ToolError(f"{tool} could not start a program on this machine (a fault of the sandbox, "
                        f"not of your code): {str(exc).split(';')[0][:300]}") from None
