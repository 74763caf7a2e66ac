"""The documentation site's MkDocs hooks (`hooks:` in mkdocs.yml), and the settings reference.

- README.md, ARCHITECTURE.md and problems/README.md become pages of the site (`index.md`,
  `architecture.md`, `problem-format.md`) from their one copy, outside `docs/`.
- A link in any page to one of those files, or from them into `docs/`, is rewritten to the
  site's page, so each file's links work both on a repository browser and in the site; any
  other link is left for `mkdocs build --strict` to check.
- The configuration page's `<!-- settings-reference -->` becomes the table of every field of
  `SolveConfig` and `GradeConfig` (key, flag, default, meaning: the field's docstring), read
  from the code when the site is built, so it cannot drift from it.

`python scripts/docs_site.py` prints the reference.
"""

from __future__ import annotations

import ast
import inspect
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = {"README.md": "index.md", "ARCHITECTURE.md": "architecture.md", "problems/README.md": "problem-format.md"}
"""Files outside docs/ that are pages of the site: their path in the repository -> the page."""
MARKER = "<!-- settings-reference -->"
LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")


def on_files(files, config):
    """Add the pages whose one copy lives outside docs/."""
    from mkdocs.structure.files import File

    for source, page in OUTSIDE.items():
        files.append(File.generated(config, page, abs_src_path=str(ROOT / source)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Rewrite links to the site's pages; fill in the settings reference."""
    source = next((s for s, p in OUTSIDE.items() if p == page.file.src_uri), f"docs/{page.file.src_uri}")
    markdown = site_links(markdown, source, page.file.src_uri)
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, settings_reference())
    return markdown


def site_links(markdown: str, source: str, page: str) -> str:
    """`markdown`, read from the repository's file `source` and shown as the site's `page`,
    with its links to pages of the site pointed at them."""

    def pointed(match: re.Match) -> str:
        target = match["target"]
        if "://" in target or target.startswith("mailto:"):
            return match[0]
        where = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if where in OUTSIDE:
            where = OUTSIDE[where]
        elif where.startswith("docs/"):
            where = where.removeprefix("docs/")
        else:
            return match[0]
        return f"]({posixpath.relpath(where, posixpath.dirname(page) or '.')}{match['anchor'] or ''})"

    return LINK.sub(pointed, markdown)


# -- the settings reference ----------------------------------------------------------------------

COMMAND_LINE_ONLY = {"problems": "the SET argument", "run": "`--run`"}
"""SolveConfig fields that are no config file's key: the command names them."""


def settings_reference() -> str:
    """Markdown tables of every field of SolveConfig ([solve]) and GradeConfig ([grade])."""
    from gitswarm.engine.config import GradeConfig, SolveConfig

    return "\n".join([
        "### `[solve]`: the run (`gitswarm solve`, `demo`, an experiment's `[solve]` and arms)", "",
        _table(SolveConfig, _flags("solve")), "",
        "### `[grade]`: the referee (`gitswarm grade`, an experiment's `[grade]`)", "",
        _table(GradeConfig, _flags("grade")), ""])


def field_docs(model: type) -> dict[str, str]:
    """Each field's docstring (the string under its line in the class body), on one line."""
    tree = ast.parse(inspect.getsource(model))
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef), f"{model.__name__}'s source is its class"
    body = cls.body
    docs: dict[str, str] = {}
    for node, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text = after.value.value if (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                                         and isinstance(after.value.value, str)) else ""
            docs[node.target.id] = " ".join(text.split())
    return docs


def _flags(command: str) -> dict[str, str]:
    """The options of `gitswarm COMMAND` by their parameter's name: `time_limit` -> `--time-limit`."""
    import typer
    import typer.main

    from gitswarm.cli.main import app

    group = typer.main.get_command(app)
    click_command = group.get_command(typer.Context(group), command)  # type: ignore[attr-defined]
    return {p.name: p.opts[0] for p in click_command.params if p.opts and p.opts[0].startswith("--")}


def _flag(field: str, flags: dict[str, str]) -> str:
    """The option that sets `field`: named as the field, less a unit (`cli.fieldopts.option_name`)."""
    from gitswarm.cli.fieldopts import option_name

    if field in COMMAND_LINE_ONLY:
        return COMMAND_LINE_ONLY[field]
    name = option_name(field, flags)
    return f"`{flags[name]}`" if name is not None else "config file only"


def _default(model: type[BaseModel], field: str) -> str:
    from gitswarm.engine.config import BUDGET_PER_PROBLEM

    info = model.model_fields[field]
    if field == "budget" and model.__name__ == "SolveConfig":
        return f"{BUDGET_PER_PROBLEM} per problem"
    if info.is_required():
        return "`runs/<set>`" if field == "run" else "required"
    value = info.get_default()
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`".replace("'", '"')


def _table(model: type[BaseModel], flags: dict[str, str]) -> str:
    docs = field_docs(model)
    rows = ["| key | flag | default | meaning |", "|---|---|---|---|"]
    for field in model.model_fields:
        key = "—" if field in COMMAND_LINE_ONLY else f"`{field}`"
        meaning = docs.get(field, "").replace("|", "\\|")
        rows.append(f"| {key} | {_flag(field, flags)} | {_default(model, field)} | {meaning} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_reference())
