"""Commit messages that plain git can answer questions with."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PREFIX = "Gitswarm-"
_ONE_LINE = re.compile(r"\s+")


def one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace so a value fits on one trailer or subject line."""
    flat = _ONE_LINE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Message:
    """A gitswarm commit message: subject, body and ordered `Gitswarm-*` trailers."""

    subject: str
    body: str = ""
    trailers: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        lines = [one_line(self.subject, 120), ""]
        body = self.body.strip()
        if body:
            # A body line that looks like a trailer would be read as one; indent it.
            lines += [f" {ln}" if re.match(r"^[\w-]+: ", ln) else ln for ln in body.splitlines()]
            lines.append("")
        lines += [f"{PREFIX}{k}: {one_line(v, 2000)}" for k, v in self.trailers.items() if v != ""]
        return "\n".join(lines) + "\n"


def parse(message: str) -> dict[str, str]:
    """The `Gitswarm-*` trailers of a message (key without prefix -> value)."""
    found: dict[str, str] = {}
    for line in reversed(message.rstrip().splitlines()):
        if not line.strip():
            break
        if line.startswith(PREFIX) and ": " in line:
            key, value = line[len(PREFIX) :].split(": ", 1)
            found.setdefault(key, value)
    return dict(reversed(found.items()))


def split_ids(value: str) -> list[str]:
    """The commit ids of an `Informed-By` trailer."""
    return [part for part in re.split(r"[,\s]+", value) if part]
