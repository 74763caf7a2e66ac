"""`run_python`: a Python program in the sandbox (the standard library, the staged code files
beside it), in the problem's image where it names one."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import anyio
from pydantic import Field

from gitswarm.engine.plan import ToolName
from gitswarm.engine.tools.args import Text, ToolArgs, Whole
from gitswarm.engine.tools.tool import Tool, sandbox_faults
from gitswarm.sandbox import SandboxResult

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox


class RunPython(ToolArgs):
    code: Text
    timeout: Whole = Field(30, ge=1, le=600)
    """Seconds before the program is killed (wall clock and CPU alike), as for `shell`."""


async def run_python(box: Toolbox, args: RunPython) -> str:
    from gitswarm.sandbox import Limits, programs_in, run

    files = {"main.py": args.code.encode()}
    for path, text in box.staged.items():
        if path.startswith("code/"):
            files[path.split("/", 2)[-1]] = text.encode()
    limits = Limits(wall_seconds=args.timeout, cpu_seconds=args.timeout, memory_bytes=1 << 30)
    hide = await box.hide()

    def python() -> SandboxResult:  # in the problem's image (its python3), where it names one
        with programs_in(box.ep.image):
            return run([sys.executable, "main.py"], files=files, limits=limits, hide=hide)

    with sandbox_faults(ToolName.RUN_PYTHON):  # the standard library only: no package is declared
        result = await anyio.to_thread.run_sync(python, limiter=box.sandbox)
    status = f"timed out after {args.timeout} s" if result.timed_out else f"exit code {result.exit_code}"
    return f"{status}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"


TOOL = Tool(ToolName.RUN_PYTHON, RunPython, run_python)
