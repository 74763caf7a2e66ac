"""Front matter as the read model reads it (subtrees and files: `memory.snapshot.Snapshot`)."""

from __future__ import annotations

from gitswarm.memory.read import ParsedBlobs


def front(data: bytes | None) -> dict:
    """A file's YAML front matter, or {} when it has none that parses."""
    if not data:
        return {}
    from gitswarm.problems.frontmatter import FrontMatterError, split  # YAML: only when a folder is read

    try:
        values = split(data.decode("utf-8", "replace")).values
    except FrontMatterError:
        return {}
    return values if isinstance(values, dict) else {}


FRONTS = ParsedBlobs(front)
"""Front matter by blob id, kept across reads: a dashboard that reads the run again parses only
the `SOLUTION.md` files written since (the values are shared: read them, never change them)."""
