"""The worker's tools: one module per tool (`<name>.py`, named by `plan.ToolName`) holding its
argument model and its handler, tied by `tool.Tool`; its texts in prompts/tools.yaml.

- `box.py` `Toolbox`: the state an episode's tools share (the step's view of main, what is
  staged) and `call`, which checks a call's arguments by its tool's model and runs its handler;
- `registry.py`: which tools a role and an episode have (from `plan.POWERS`), one path for
  the schemas an episode is offered (`specs.py`) and what its calls run;
- `args.py`: the checking and mending of a call's arguments (`ToolArgs`, `check`);
- the final actions `contribute`, `nominate` and `abstain` return a `Final`, which ends the
  episode.

Program and reproduce problems also get `shell` (`plan.CODE_TOOLS`): a command in the episode's
code tree (`engine.workspace`), whose changes become staged files and deletions."""

from gitswarm.engine.tools.args import ToolError
from gitswarm.engine.tools.box import Toolbox
from gitswarm.engine.tools.specs import tool_schemas
from gitswarm.engine.tools.tool import Final

__all__ = ["Final", "ToolError", "Toolbox", "tool_schemas"]
