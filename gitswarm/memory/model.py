"""The memory's records: what a worker contributes, and what readers get back."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitswarm.errors import BadInput
from gitswarm.memory.commitmeta import Record
from gitswarm.usage import Usage

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
KIND_FOLDERS = {"note": "notes", "lemma": "lemmas", "attempt": "attempts", "review": "reviews",
                "code": "code"}


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
class Contribution:
    """One episode's atomic result: files in its problem folder, as one commit."""

    problem: str
    episode: str
    worker: str
    kind: str
    """note, lemma, attempt, review, code or summary: the commit subject's prefix."""
    title: str
    files: dict[str, bytes | str]
    """Paths relative to `problems/<problem>/`, e.g. `lemmas/sunny-lines.md`."""
    parent: str
    """The commit the worker started from (normally main's tip then)."""
    op: str
    """Stable operation id: writing the same op twice returns the first commit."""
    summary: str = ""
    informed_by: tuple[str, ...] = ()
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    self_assessment: str = ""
    candidate: str = ""
    """A nomination's candidate commit (`commitmeta.Nomination.candidate`)."""
    reviews: str = ""
    """A review's reviewed commit (`commitmeta.Review.reviews`)."""
    verdict: str = ""
    """A review's verdict (`commitmeta.Review.verdict`)."""
    deleted: tuple[str, ...] = ()
    """Paths relative to `problems/<problem>/` the contribution removes (a file a code
    worker's shell command deleted)."""

    def file_bytes(self) -> dict[str, bytes]:
        return {p: d.encode() if isinstance(d, str) else d for p, d in self.files.items()}


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
