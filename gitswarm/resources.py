"""Find the files shipped with gitswarm (prompts, problem sets) in a checkout or a wheel."""

from __future__ import annotations

from functools import cache
from pathlib import Path

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


@cache
def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(data_dir("prompts")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["data"] = fence_safe
    return env


def fence_safe(text: object) -> str:
    """Agent-written text for inside a `<memory-data>` fence: it cannot close the fence."""
    return str(text).replace("</memory-data", "<\\/memory-data").replace("<memory-data", "<\\memory-data")


def render(template: str, **values: object) -> str:
    """Render a template from `prompts/`; a missing value is an error, never blank text."""
    return _environment().get_template(template).render(**values)
