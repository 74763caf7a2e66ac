"""The memory's records: what a write returns, and what readers get back (what a worker
contributes is `domain.contribution.Contribution`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitswarm.errors import BadInput
from gitswarm.memory.commitmeta import Record

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")


def safe_name(value: str) -> bool:
    """Ids that become ref names or e-mail local parts must be plain and short."""
    return bool(SAFE_NAME.match(value)) and ".." not in value and not value.endswith(".lock")


def name_problem(what: str, value: str) -> str:
    return f"invalid {what} {value!r}: use letters, digits, '.', '_' and '-'"


def check_name(what: str, value: str) -> str:
    """`value`, a name given as input (a worker's, a problem's); `BadInput` if it is not safe."""
    if not safe_name(value):
        raise BadInput(name_problem(what, value))
    return value


@dataclass(frozen=True)
class Written:
    """The commit holding an operation's result; `existed` when a retry found it already done."""

    commit: str
    existed: bool = False


@dataclass(frozen=True)
class Item:
    """A file of a problem on some commit (a note, lemma, attempt, review or code file)."""

    kind: str
    path: str
    blob: str
    size: int


@dataclass(frozen=True)
class CommitInfo:
    """A commit of the memory as readers and `gitswarm log` show it."""

    id: str
    subject: str
    body: str
    author: str
    time: int
    parents: tuple[str, ...]
    trailers: dict[str, str]
    """Its trailers as text (`trailers.parse`), for display; readers use `meta`."""
    meta: Record | None = None
    """Its record (`commitmeta.decode`); None for a commit without gitswarm trailers."""

    @property
    def problem(self) -> str:
        return getattr(self.meta, "problem", "")

    @property
    def kind(self) -> str:
        return str(getattr(self.meta, "kind", ""))

    @property
    def informed_by(self) -> list[str]:
        return list(getattr(self.meta, "informed_by", ()))
