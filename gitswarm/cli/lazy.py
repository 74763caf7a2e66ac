"""Commands loaded when they run: `gitswarm status` imports the status command's module and
what it reads with, not every command's (`solve`'s options import the engine's settings and
pydantic, `demo` the scripted model): a third of a second of a status's half-second target.

`LazyGroup` is the app's group (`cli.common.Group`) whose commands are named by where they
live (`module:attribute`, a command function or a sub-app) and built the first time the group
is asked for one: to run it, or to list it in `gitswarm --help` (which therefore still imports
every command module, as before; none of them imports litellm, textual or pygit2 at the top).
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand

from gitswarm.cli.common import Group, PanelCommand


class LazyGroup(Group):
    """A group whose `lazy` commands (name -> `module:attribute`) are imported and built when
    first asked for, in the order `lazy` lists them."""

    lazy: ClassVar[dict[str, str]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.commands, *(name for name in self.lazy if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.commands[cmd_name] = built(cmd_name, self.lazy[cmd_name])
        return self.commands.get(cmd_name)


def built(name: str, where: str) -> Any:
    """The click command `where` names: a typer sub-app as a group, a function as a command
    with the app's own settings (plain help, no completion options)."""
    module, attribute = where.split(":")
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command: Any = typer.main.get_group(target)
    else:
        single = typer.Typer(rich_markup_mode=None, add_completion=False)
        single.command(name=name)(target)
        command = typer.main.get_command(single)
    command.name = name
    if type(command) is TyperCommand:  # typer builds them; the subclass only formats help
        command.__class__ = PanelCommand
    return command
