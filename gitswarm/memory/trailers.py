"""The wire format of gitswarm's commit messages: a subject, a body and `Gitswarm-*` trailers.

Only `commitmeta` (the typed records) and a few writers of non-run commits use it directly.
A value is never cut: whitespace is collapsed so it stays one line, and a list is one
trailer per item (git's own convention for repeated trailers), so `git log
--format=%(trailers:key=...)` and `--grep` still answer questions about a run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

PREFIX = "Gitswarm-"
_ONE_LINE = re.compile(r"\s+")
_LOOKS_LIKE_TRAILER = re.compile(r"^[\w-]+: ")


def one_line(text: str, limit: int | None = 200) -> str:
    """Collapse whitespace so a value fits on one line; cut it (with an ellipsis) only when a
    `limit` is given, which only display strings (subjects, titles) have."""
    flat = _ONE_LINE.sub(" ", text).strip()
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Message:
    """A gitswarm commit message: subject, body and ordered `Gitswarm-*` trailers (a list value
    is written as one trailer per item)."""

    subject: str
    body: str = ""
    trailers: Mapping[str, str | Sequence[str]] = field(default_factory=dict)

    def render(self) -> str:
        lines = [one_line(self.subject, 120), ""]
        body = self.body.strip()
        if body:
            # A body line that looks like a trailer would be read as one; indent it.
            lines += [f" {ln}" if _LOOKS_LIKE_TRAILER.match(ln) else ln for ln in body.splitlines()]
            lines.append("")
        for key, value in self.trailers.items():
            values = [value] if isinstance(value, str) else list(value)
            lines += [f"{PREFIX}{key}: {flat}" for v in values if (flat := one_line(v, None))]
        return "\n".join(lines) + "\n"


def parse_all(message: str) -> dict[str, list[str]]:
    """The `Gitswarm-*` trailers of a message: key without prefix -> its values in order (a key
    is repeated for a list). The trailer block is the message's last paragraph."""
    found: dict[str, list[str]] = {}
    for line in reversed(message.rstrip().splitlines()):
        if not line.strip():
            break
        if line.startswith(PREFIX) and ": " in line:
            key, value = line[len(PREFIX) :].split(": ", 1)
            found.setdefault(key, []).insert(0, value.strip())
    return dict(reversed(found.items()))


def parse(message: str) -> dict[str, str]:
    """The trailers as one string per key, a repeated key's values joined by ", " (the form
    of the first runs, which `split_ids` splits). Prefer `commitmeta.decode`."""
    return {key: ", ".join(values) for key, values in parse_all(message).items()}


def body(message: str) -> tuple[str, str]:
    """(subject, body) of a message, without its trailer block (its last paragraph)."""
    subject, _, rest = message.partition("\n")
    rest = rest.strip()
    if parse_all(message):
        rest = rest.rpartition("\n\n")[0]
    return subject, rest.strip()


def split_ids(value: str) -> list[str]:
    """The items of a list value written on one line (commit ids, paths: no spaces or commas)."""
    return [part for part in re.split(r"[,\s]+", value) if part]
