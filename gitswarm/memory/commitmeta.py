"""The commit-metadata codec: one typed record per kind of gitswarm commit, one encoder, one
decoder, and the files a commit changed (`changes`).

Every reader of a commit's metadata goes through `decode`; every writer through `encode`. The
trailer keys live here only (each record field names its key in its metadata; `trailers` is
the line format under it). Lists are one trailer per item and no value is cut, so a 64-file
contribution keeps its 64 files; commits of the first runs (lists joined by ", " on one line,
values cut at 2,000 characters) decode to the same records, and where their `Files` list was
cut, `changes` reads the commit's tree instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, overload

import pygit2

from gitswarm.domain.kinds import CONTRIBUTION_KINDS, Kind, Verdict, Verification
from gitswarm.memory.trailers import PREFIX, Message, parse_all, split_ids


@overload
def _key(name: str, many: Literal[False] = False) -> str: ...
@overload
def _key(name: str, many: Literal[True]) -> tuple[str, ...]: ...
def _key(name: str, many: bool = False) -> Any:
    """A record field written as the trailer `name` (`many`: a tuple, one trailer per item): a
    dataclass field, typed as the value it holds, as `field` is."""
    if many:
        return field(default=(), metadata={"key": name, "many": True})
    return field(default="", metadata={"key": name})


@dataclass(frozen=True)
class ContributionRecord:
    """An episode's commit: a note, lemma, attempt, code, summary (see `NominationRecord`, `ReviewRecord`)."""

    run: str = _key("Run")
    episode: str = _key("Episode")
    op: str = _key("Op")
    worker: str = _key("Worker")
    problem: str = _key("Problem")
    kind: Kind | str = field(default=Kind.NOTE, metadata={"key": "Kind"})
    informed_by: tuple[str, ...] = _key("Informed-By", many=True)
    model: str = _key("Model")
    tokens: str = _key("Tokens")
    """`in=… out=…` and the cache and reasoning parts (`Usage.trailer`)."""
    cost_usd: str = _key("Cost-USD")
    """USD with four decimals, or `unknown`."""
    self_assessment: str = _key("Self-Assessment")
    files: tuple[str, ...] = _key("Files", many=True)
    """The files it wrote, as its writer declared them (`changes` gives what its tree holds;
    the remote intake checks that the two agree)."""
    deleted: tuple[str, ...] = _key("Deleted", many=True)
    person: str = _key("Person")
    """The person who wrote it (`gitswarm note`, `gitswarm review`), as git names them; "" for a
    worker's (and every commit of the runs before people could write)."""
    extra: dict[str, str] = field(default_factory=dict, compare=False)
    """Trailers no field of the record names, kept as they were."""


@dataclass(frozen=True)
class NominationRecord(ContributionRecord):
    """A vote for one candidate (an attempt or program of the same problem)."""

    candidate: str = _key("Candidate")


@dataclass(frozen=True)
class ReviewRecord(ContributionRecord):
    """A review of one candidate, with its verdict (a string that is not a `Verdict` when the
    commit came from elsewhere with another word)."""

    reviews: str = _key("Reviews")
    verdict: Verdict | str = field(default="", metadata={"key": "Verdict"})


@dataclass(frozen=True)
class Merge:
    """The merger's commit on main, composing episodes' branches."""

    run: str = _key("Run")
    op: str = _key("Op")
    kind: Kind | str = field(default=Kind.MERGE, metadata={"key": "Kind"})
    merged: tuple[str, ...] = _key("Merged", many=True)
    """The episodes it composed."""
    extra: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Solution:
    """`SOLUTION.md` written on main for a problem's selected candidate."""

    run: str = _key("Run")
    op: str = _key("Op")
    problem: str = _key("Problem")
    kind: Kind | str = field(default=Kind.SOLUTION, metadata={"key": "Kind"})
    candidate: str = _key("Candidate")
    verification: Verification | str = field(default="", metadata={"key": "Verification"})
    extra: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class GradeRecord:
    """A referee's grade of a candidate, on the grades ref."""

    run: str = _key("Run")
    problem: str = _key("Problem")
    kind: Kind | str = field(default=Kind.GRADE, metadata={"key": "Kind"})
    candidate: str = _key("Candidate")
    grader: str = _key("Grader")
    model: str = _key("Model")
    extra: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Removal:
    """A replay arm's start: the start state without the files of the commits a candidate cited."""

    run: str = _key("Run")
    problem: str = _key("Problem")
    kind: Kind | str = field(default=Kind.REPLAY, metadata={"key": "Kind"})
    replays: str = _key("Replays")
    deleted: tuple[str, ...] = _key("Deleted", many=True)
    extra: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ClaimNote:
    """A remote worker's claim of an episode (on its claim ref, never on main)."""

    episode: str = _key("Episode")
    worker: str = _key("Worker")
    problem: str = _key("Problem")
    claim: str = _key("Claim")
    extra: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Other:
    """Any other commit with gitswarm trailers (a system write on main without a known kind)."""

    run: str = _key("Run")
    op: str = _key("Op")
    problem: str = _key("Problem")
    kind: str = _key("Kind")
    extra: dict[str, str] = field(default_factory=dict, compare=False)


Record = ContributionRecord | Merge | Solution | GradeRecord | Removal | ClaimNote | Other
_BY_KIND: dict[str, type[Record]] = {
    Kind.NOMINATION: NominationRecord, Kind.REVIEW: ReviewRecord, Kind.MERGE: Merge, Kind.SOLUTION: Solution,
    Kind.GRADE: GradeRecord, Kind.REPLAY: Removal,
    **{k: ContributionRecord for k in CONTRIBUTION_KINDS - {Kind.NOMINATION, Kind.REVIEW}}}
_ENUMS = {"kind": Kind, "verdict": Verdict, "verification": Verification}
_KEYED: dict[type[Record], tuple[tuple[str, str, bool], ...]] = {
    cls: tuple((f.name, f.metadata["key"], f.metadata.get("many", False)) for f in fields(cls) if "key" in f.metadata)
    for cls in (*_BY_KIND.values(), ClaimNote, Other)}
"""Each record class's fields that are trailers: (field, key, is a list), in trailer order."""
_ALL_KEYS = frozenset(key for keyed in _KEYED.values() for _, key, _ in keyed)


def encode(record: Record, subject: str, body: str = "") -> str:
    """The commit message of `record`: `subject` (cut to one line), `body`, then its trailers
    (empty fields left out, lists one trailer per item, nothing cut)."""
    trailers: dict[str, str | tuple[str, ...]] = {}
    for name, key, many in _KEYED[type(record)]:
        value = getattr(record, name)
        trailers[key] = value if many else str(value)
    return Message(subject, body, {**trailers, **record.extra}).render()


def decode(message: str) -> Record | None:
    """The record a commit message carries, or None when it has no gitswarm trailers (the
    run's first commit, a commit of someone else). Unknown trailers go to `extra`."""
    found = parse_all(message)
    return from_trailers(found) if found else None


def from_trailers(trailers: Mapping[str, str | Sequence[str]]) -> Record:
    """The record of trailer values (key -> value, or values for a repeated key): its class
    follows `Kind`; a list value may also be one string of items joined by ", " (first runs)."""
    found = {k: [v] if isinstance(v, str) else list(v) for k, v in trailers.items()}
    kind = found.get("Kind", [""])[-1]
    cls = _BY_KIND.get(kind) or (ClaimNote if "Claim" in found and not kind else Other)
    values: dict[str, Any] = {}  # field -> its value, of the type the field's metadata gives
    for name, key, many in _KEYED[cls]:
        if key not in found:
            continue
        raw = found.pop(key)
        if many:
            values[name] = tuple(item for v in raw for item in split_ids(v))
        else:
            enum = _ENUMS.get(name)
            values[name] = _as(enum, raw[-1]) if enum and cls is not Other else raw[-1]
    return cls(**values, extra={k: ", ".join(v) for k, v in found.items()})


def _as(enum: type[StrEnum], value: str) -> StrEnum | str:
    try:
        return enum(value)
    except ValueError:
        return value


def stray(record: Record) -> list[str]:
    """The trailers of `record` that belong to another kind of record (a `Candidate` on an
    attempt, a `Verdict` on a nomination): a forged or garbled commit has them."""
    return sorted(k for k in record.extra if k in _ALL_KEYS)


@dataclass(frozen=True)
class Changes:
    """What a commit changed in its problem's folder, relative to it (`notes/x.md`)."""

    written: tuple[str, ...]
    """Files added or changed, in path order."""
    deleted: tuple[str, ...]


def changes(repo: pygit2.Repository, commit: pygit2.Commit, problem: str, meta: Record | None = None) -> Changes:
    """The files `commit` adds, changes and deletes under `problems/<problem>/`: the one answer to
    "which files did this commit write". A contribution's record lists them whole (the encoder
    never cuts, and the remote intake refuses a commit whose lists differ from its tree), so
    they are read from `meta` (decoded here when not given); a list the first runs cut (it ends
    in "…", which no path holds) or a commit without lists is read from its tree against its
    first parent (a diff for every commit made building the index 2.5 times slower)."""
    meta = decode(commit.message) if meta is None else meta
    if isinstance(meta, ContributionRecord) and meta.files and not any("…" in p for p in meta.files + meta.deleted):
        return Changes(tuple(sorted(meta.files)), tuple(sorted(meta.deleted)))
    prefix = f"problems/{problem}/"
    diff = commit.parents[0].tree.diff_to_tree(commit.tree) if commit.parents else commit.tree.diff_to_tree(swap=True)
    written: list[str] = []
    deleted: list[str] = []
    for delta in diff.deltas:
        path = delta.new_file.path
        if not path.startswith(prefix):
            continue
        (deleted if delta.status_char() == "D" else written).append(path.removeprefix(prefix))
    return Changes(tuple(sorted(written)), tuple(sorted(deleted)))


def git_key(name: str) -> str:
    """The trailer that record field `name` is written as, as plain git names it (`informed_by` ->
    `Gitswarm-Informed-By`), for `git log --grep` and `--format=%(trailers:key=...)`."""
    for keyed in _KEYED.values():
        for field_name, key, _ in keyed:
            if field_name == name:
                return PREFIX + key
    raise KeyError(name)
