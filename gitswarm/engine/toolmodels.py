"""The argument model of each worker tool, by role: its fields are the schema the model is
offered (`toolspecs`, with the descriptions of prompts/tools.yaml) and what a call is checked
by (`toolargs.check`). `ROLES` is the registry of the argument models: which tools each role
has, and with which model; `tools.HANDLERS` holds what runs each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal, Protocol

from pydantic import Field, ValidationInfo, model_validator

from gitswarm.engine.plan import POWERS, Role
from gitswarm.engine.shell import DEFAULT_TIMEOUT
from gitswarm.engine.toolargs import AS_TEXT, LAST, Flag, Text, Texts, ToolArgs, Whole, note

ItemKind = Annotated[Literal["note", "lemma", "attempt", "review", "code", "nomination"], AS_TEXT]
Kind = Annotated[Literal["note", "lemma", "attempt", "review", "code", "summary"], AS_TEXT]
FreeKind = Annotated[Literal["note", "lemma", "attempt", "code", "summary"], AS_TEXT]
AttemptKind = Annotated[Literal["note", "lemma", "attempt", "code"], AS_TEXT]
ReviewKind = Annotated[Literal["review"], AS_TEXT]
Verdict = Annotated[Literal["pass", "gaps", "critical"], AS_TEXT]
KIND_ONLY = {"reviews": "review", "verdict": "review"}
"""`contribute`'s arguments that belong to one kind: dropped, with a note, from the others."""


class ListItems(ToolArgs):
    kind: ItemKind | None = None
    offset: Whole = Field(0, ge=0)


class ReadFile(ToolArgs):
    path: Text
    offset: Whole = Field(0, ge=0)


class Search(ToolArgs):
    query: Text


class InFlight(ToolArgs):
    """`in_flight` takes no arguments (any sent are dropped with a note)."""


class Announce(ToolArgs):
    intent: Text


class WriteFile(ToolArgs):
    path: Text
    content: Text
    append: Flag = False


class RunPython(ToolArgs):
    code: Text


class RunShell(ToolArgs):
    command: Text
    timeout: Whole = Field(DEFAULT_TIMEOUT, ge=1, le=600)


class ContributeArgs(Protocol):
    """What `contribute` reads, whichever role's model checked it."""

    @property
    def kind(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def informed_by(self) -> Sequence[str]: ...
    @property
    def self_assessment(self) -> str: ...
    @property
    def reviews(self) -> str | None: ...
    @property
    def verdict(self) -> str | None: ...


class Contribute(ToolArgs):
    """`contribute` as a worker has it: every kind; `reviews` and `verdict` belong to kind review
    (small models fill every field: sent with another kind, they are dropped with a note)."""

    kind: Kind
    title: Text
    summary: Text
    informed_by: Texts = Field(default_factory=list)
    self_assessment: Text = ""
    reviews: Text | None = None
    verdict: Verdict | None = None

    @model_validator(mode="after")
    def _of_its_kind(self, info: ValidationInfo) -> Contribute:
        foreign = [key for key, only in KIND_ONLY.items() if self.kind != only and getattr(self, key) is not None]
        for key in foreign:
            note(info, LAST, f"ignored `{key}` (only for kind {KIND_ONLY[key]})")
        return self.model_copy(update=dict.fromkeys(foreign)) if foreign else self


class FreeContribute(ToolArgs):
    """`contribute` in a run that assigns reviews: kind review is not the episode's to write."""

    kind: FreeKind
    title: Text
    summary: Text
    informed_by: Texts = Field(default_factory=list)
    self_assessment: Text = ""
    reviews: ClassVar[None] = None
    verdict: ClassVar[None] = None


class ReviewContribute(ToolArgs):
    """`contribute` in an assigned review: kind review alone, naming its candidate and verdict."""

    kind: ReviewKind
    title: Text
    summary: Text
    informed_by: Texts = Field(default_factory=list)
    self_assessment: Text = ""
    reviews: Text
    verdict: Verdict


class BlindContribute(ToolArgs):
    """`contribute` in a blind review, which sees no commit to cite but its candidate (which
    its review cites)."""

    kind: ReviewKind
    title: Text
    summary: Text
    self_assessment: Text = ""
    reviews: Text
    verdict: Verdict
    informed_by: ClassVar[tuple[str, ...]] = ()


class AttemptContribute(ToolArgs):
    """`contribute` in an isolated attempt: its own work, citing no one's (it sees none)."""

    kind: AttemptKind
    title: Text
    summary: Text
    self_assessment: Text = ""
    informed_by: ClassVar[tuple[str, ...]] = ()
    reviews: ClassVar[None] = None
    verdict: ClassVar[None] = None


class Nominate(ToolArgs):
    candidate: Text
    rationale: Text


class Abstain(ToolArgs):
    reason: Text


WORKER: dict[str, type[ToolArgs]] = {
    "list_items": ListItems, "read_file": ReadFile, "search": Search, "in_flight": InFlight,
    "announce": Announce, "write_file": WriteFile, "run_python": RunPython, "shell": RunShell,
    "contribute": Contribute, "nominate": Nominate, "abstain": Abstain,
}
"""Every tool, by name, in the order they are offered."""
CONTRIBUTE: dict[Role, type[ToolArgs]] = {
    Role.WORKER: Contribute, Role.FREE: FreeContribute, Role.REVIEW: ReviewContribute,
    Role.BLIND: BlindContribute, Role.INDEPENDENT: AttemptContribute, Role.BEST_OF_N: AttemptContribute,
}
"""`contribute`'s argument model in each role."""

ROLES: dict[Role, dict[str, type[ToolArgs]]] = {
    role: {name: CONTRIBUTE[role] if name == "contribute" else WORKER[name] for name in powers.tools}
    for role, powers in POWERS.items()
}
"""The tools of each role (`plan.POWERS`) and their argument models: `worker`, any episode of a
run whose episodes choose to review; `free`, the same in a run that assigns reviews (`contribute`
without kind review); `review`, an assigned review that sees the memory; `blind`, a blind
review; `independent` and `best-of-n`, an isolated attempt (no memory to list, no one to
announce to, nothing to nominate). A review episode announces nothing (the scheduler announces
its assignment) and nominates nothing."""
