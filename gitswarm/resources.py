"""Find the files shipped with gitswarm (prompts, problem sets) in a checkout or a wheel."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by the first render, not with gitswarm
    import jinja2

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The shipped folder `name` (`prompts` or `problems`)."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"gitswarm's {name}/ folder is missing from this installation")


def resolve_set(argument: str | Path) -> Path:
    """A problem-set folder: the path as given, else a shipped set of that name."""
    path = Path(argument)
    if path.exists():
        return path
    shipped = data_dir("problems")
    for candidate in (shipped / path, shipped / path.name):
        if candidate.is_dir():
            return candidate
    return path


class SetNotFound(FileNotFoundError):
    """A problem set that is neither a folder nor a shipped set; its message lists the shipped
    sets and the nearest name."""

    def __init__(self, argument: str, shipped: list[str], nearest: str | None) -> None:
        self.argument, self.shipped, self.nearest = argument, shipped, nearest
        guess = f"; did you mean {nearest}?" if nearest else "."
        super().__init__(f"no problem set {argument}: it is neither a folder nor a shipped set{guess} "
                         f"The shipped sets are {', '.join(shipped)}; give one of their names, or the folder "
                         "of your own set (folders of <id>.md files; `gitswarm problems import` makes one)")


def find_set(argument: str | Path) -> Path:
    """The folder `resolve_set` finds, or SetNotFound when there is none."""
    import difflib

    path = resolve_set(argument)
    if path.exists():
        return path
    shipped = shipped_sets()
    nearest = difflib.get_close_matches(Path(argument).name, shipped, n=1, cutoff=0.5)
    raise SetNotFound(str(argument), shipped, nearest[0] if nearest else None)


def shipped_sets() -> list[str]:
    """The names of the problem sets shipped with gitswarm."""
    return sorted(p.name for p in data_dir("problems").iterdir() if p.is_dir() and not p.name.startswith("."))


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(data_dir("prompts")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        auto_reload=False,  # the prompts are installed files: no stat of the template at every render
    )
    env.filters["data"] = fence_safe
    return env


def fence_safe(text: object) -> str:
    """Agent-written text for inside a `<memory-data>` fence: it cannot close the fence."""
    return str(text).replace("</memory-data", "<\\/memory-data").replace("<memory-data", "<\\memory-data")


def render(template: str, **values: object) -> str:
    """Render a template from `prompts/`; a missing value is an error, never blank text."""
    return _environment().get_template(template).render(**values)
