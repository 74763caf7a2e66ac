"""Reading main's tree for the read model: subtrees, files and front matter, by path."""

from __future__ import annotations

from pygit2.enums import FileMode

from gitswarm.memory import trees
from gitswarm.problems.frontmatter import FrontMatterError, split


def front(data: bytes | None) -> dict:
    """A file's YAML front matter, or {} when it has none that parses."""
    if not data:
        return {}
    try:
        values = split(data.decode("utf-8", "replace")).values
    except FrontMatterError:
        return {}
    return values if isinstance(values, dict) else {}


def subtree(repo, tree, path: str):
    """The tree at `path` below `tree`, or None."""
    entry = trees.lookup(tree, path)
    return repo[entry[0]] if entry is not None and entry[1] == FileMode.TREE else None


def blob(repo, tree, path: str) -> bytes | None:
    """The file at `path` below `tree`, or None."""
    entry = trees.lookup(tree, path)
    return repo[entry[0]].data if entry is not None and entry[1] != FileMode.TREE else None
