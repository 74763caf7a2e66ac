"""`contribute`, the final action that commits what the episode staged: one argument model per
role (the kinds it offers are the role's, `plan.POWERS`), and the handler, which checks the
contribution whole (its kind, what it reviews and the verdict, the commits it cites) before
anything is written; a candidate that answers a critical review says so in its title. A
contribution is made on main as the step's view shows it (its parent), so it may extend work
that landed after the episode started, and the merger composes it like any other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, ClassVar, Protocol

from pydantic import Field, ValidationInfo, model_validator

from gitswarm.core.status import Status
from gitswarm.domain.kinds import VERDICTS, Kind, Verdict
from gitswarm.engine.plan import POWERS, Role, ToolName
from gitswarm.engine.tools.args import AS_TEXT, LAST, OneOf, Text, Texts, ToolArgs, ToolError, note
from gitswarm.engine.tools.tool import Final, Tool
from gitswarm.problems.model import Kind as ProblemKind

if TYPE_CHECKING:
    from gitswarm.engine.tools.box import Toolbox

VerdictArg = Annotated[str, OneOf(VERDICTS), AS_TEXT]
KIND_ONLY = {"reviews": Kind.REVIEW, "verdict": Kind.REVIEW}
"""`contribute`'s arguments that belong to one kind: dropped, with a note, from the others."""


def kinds_of(role: Role) -> OneOf:
    """The kinds `contribute` offers and takes in `role`: its plan's (`Powers.kinds`)."""
    return OneOf(POWERS[role].kinds)


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

    kind: Annotated[str, kinds_of(Role.WORKER), AS_TEXT]
    title: Text
    summary: Text
    informed_by: Texts = Field(default_factory=list)
    self_assessment: Text = ""
    reviews: Text | None = None
    verdict: VerdictArg | None = None

    @model_validator(mode="after")
    def _of_its_kind(self, info: ValidationInfo) -> Contribute:
        foreign = [key for key, only in KIND_ONLY.items() if self.kind != only and getattr(self, key) is not None]
        for key in foreign:
            note(info, LAST, f"ignored `{key}` (only for kind {KIND_ONLY[key]})")
        return self.model_copy(update=dict.fromkeys(foreign)) if foreign else self


class FreeContribute(ToolArgs):
    """`contribute` in a run that assigns reviews: kind review is not the episode's to write."""

    kind: Annotated[str, kinds_of(Role.FREE), AS_TEXT]
    title: Text
    summary: Text
    informed_by: Texts = Field(default_factory=list)
    self_assessment: Text = ""
    reviews: ClassVar[None] = None
    verdict: ClassVar[None] = None


class ReviewContribute(ToolArgs):
    """`contribute` in an assigned review: kind review alone, naming its candidate and verdict."""

    kind: Annotated[str, kinds_of(Role.REVIEW), AS_TEXT]
    title: Text
    summary: Text
    informed_by: Texts = Field(default_factory=list)
    self_assessment: Text = ""
    reviews: Text
    verdict: VerdictArg


class BlindContribute(ToolArgs):
    """`contribute` in a blind review, which sees no commit to cite but its candidate (which
    its review cites)."""

    kind: Annotated[str, kinds_of(Role.BLIND), AS_TEXT]
    title: Text
    summary: Text
    self_assessment: Text = ""
    reviews: Text
    verdict: VerdictArg
    informed_by: ClassVar[tuple[str, ...]] = ()


class AttemptContribute(ToolArgs):
    """`contribute` in an isolated attempt (independent or best-of-n, whose powers are one):
    its own work, citing no one's (it sees none)."""

    kind: Annotated[str, kinds_of(Role.INDEPENDENT), AS_TEXT]
    title: Text
    summary: Text
    self_assessment: Text = ""
    informed_by: ClassVar[tuple[str, ...]] = ()
    reviews: ClassVar[None] = None
    verdict: ClassVar[None] = None


async def contribute(box: Toolbox, args: ContributeArgs) -> Final:
    kind, reviews, verdict, ep = args.kind, args.reviews, args.verdict, box.ep
    if kind not in ep.kinds:
        raise ToolError(f"kind must be one of {', '.join(ep.kinds)} in this episode")
    box.staged, box.deleted = await box.code.rebase(box.at, box.staged, box.deleted)
    if ep.reviewing:  # a review episode commits its review alone
        _reviews_only(box)
    if not box.staged and not box.deleted:
        raise ToolError(f"nothing is staged: {ToolName.WRITE_FILE} first, then {ToolName.CONTRIBUTE}")
    if kind == Kind.CODE and ep.kind == ProblemKind.REPRODUCE and (  # a candidate is code/<slug>/ with compile.sh
            problem := await box.code.codebase_problem(box.staged, box.deleted, box.at)):
        raise ToolError(problem)
    _writes_its_candidate(box, kind)
    reviewed = _reviewed(box, kind, reviews, verdict)
    if reviewed:  # a review changes nothing of what it reviews, whoever writes it
        _reviews_only(box)
    cited = [*(reviewed[:1] if reviewed else []), *(_commit(box, ref) for ref in args.informed_by)]
    files, title = dict(box.staged), args.title.strip()[:100]
    if kind in (Kind.ATTEMPT, Kind.CODE):
        title = _revision_title(box, cited, title)
    if reviewed:
        files.update(_stamped(box, *reviewed, str(verdict)))
    of, said = (reviewed[0], str(verdict)) if reviewed else ("", "")  # a review's: what it reviews, its verdict
    made = box.contribution(kind, title, args.summary, files, cited, args.self_assessment, reviews=of, verdict=said)
    return Final(Status.CONTRIBUTE, replace(made, deleted=tuple(sorted(box.deleted))))


def _writes_its_candidate(box: Toolbox, kind: str) -> None:
    """A candidate's contribution writes its candidate: kind attempt a file under attempts/,
    kind code a change under code/. Without one it would commit no candidate, yet answer the
    critical review it cites (a revision that revises nothing), and leave its problem with
    nothing for anyone to do."""
    folder = {Kind.ATTEMPT: "attempts/", Kind.CODE: "code/"}.get(Kind(kind))
    if folder and not any(p.startswith(folder) for p in [*box.staged, *box.deleted]):
        where = "attempts/<name>.md" if kind == Kind.ATTEMPT else "code/<slug>/"
        other = "; other work is kind note" if Kind.NOTE in box.ep.kinds else ""
        raise ToolError(f"kind {kind} commits a candidate, and nothing is staged under {folder}: stage it "
                        f"({where}) with {ToolName.WRITE_FILE}, then {ToolName.CONTRIBUTE}{other}")


def _reviews_only(box: Toolbox) -> None:
    """Keep the staged review files alone: no other file, no deletion."""
    box.staged, box.deleted = {p: t for p, t in box.staged.items() if p.startswith("reviews/")}, set()


def _revision_title(box: Toolbox, cited: list[str], title: str) -> str:
    """The title of a candidate that cites a critical review: it says what it revises and
    which review it answers, so `git log` tells a revision from the attempt it replaces."""
    problem = box.ep.problem_id
    for candidate, by in box.index.problems[problem].reviews.items():
        for review in by.values():
            found = box.index.resolve(problem, candidate) if review.commit in cited else None
            if review.verdict == Verdict.CRITICAL and found is not None:
                return f"revises {found[1]} (critical review {review.commit[:7]}): {title}"
    return title


def _stamped(box: Toolbox, commit: str, path: str, verdict: str) -> dict[str, str]:
    """The staged review files, each headed by front matter naming what it reviews, its
    verdict and this episode: how `gitswarm status` finds the review's commit from main's
    tree (op `<episode>-final`), whose trailers it then trusts."""
    head = f"---\nreviews: {commit}\npath: {path}\nverdict: {verdict}\nepisode: {box.ep.episode}\n---\n\n"
    return {rel: head + text for rel, text in box.staged.items() if rel.startswith("reviews/")}


def _reviewed(box: Toolbox, kind: str, reviews: str | None, verdict: str | None) -> tuple[str, str] | None:
    """The commit and path a review reviews (None for other kinds, which ignore both), its
    verdict checked. A review of one's own attempt is committed, but the index does not count it."""
    if kind != Kind.REVIEW:
        return None
    if not reviews or not reviews.strip():
        raise ToolError("a review names the attempt it reviews: give reviews=<its path (attempts/... "
                        "or code/...) or commit id>")
    if verdict not in VERDICTS:
        raise ToolError(f"a review ends with a verdict: give verdict as one of {', '.join(VERDICTS)} "
                        "(pass: no issue; gaps: justification gaps only; critical: a critical error)")
    if not any(rel.startswith("reviews/") for rel in box.staged):
        raise ToolError(f"stage the review itself under reviews/ (e.g. reviews/<name>.md), then {ToolName.CONTRIBUTE}")
    if box.ep.reviewing:
        return _assigned(box, reviews)
    found = box.index.resolve(box.ep.problem_id, reviews)
    if found is None:
        raise ToolError(f"reviews: no attempt or program {reviews!r} of this problem in the memory; "
                        "give its path (attempts/... or code/...) or commit id")
    return found


def _assigned(box: Toolbox, reviews: str) -> tuple[str, str]:
    """The commit and path of a review episode's candidate, which `reviews` must name (by
    its path or a prefix of its commit id of 7 characters or more)."""
    path, commit = box.ep.assigned.path, box.ep.assigned.commit
    named = reviews.strip().removeprefix(f"{box.base}/").rstrip("/")
    if named != path and not (len(named) >= 7 and commit.startswith(named.lower())):
        raise ToolError(f"reviews: this episode reviews {path} (commit {commit[:12]}), the candidate it was "
                        f"assigned, not {reviews!r}; name it, or abstain")
    return commit, path


def _commit(box: Toolbox, reference: str) -> str:
    """A cited commit, named by an item's path or by (a prefix of) its id."""
    ref = str(reference).strip()
    items = box.index.problems[box.ep.problem_id].items
    rel = ref.removeprefix(f"{box.base}/")
    if rel in items:
        return items[rel]
    if len(ref) >= 7:
        with box.index.lock:  # files_of is the live index's (a step's view shares it)
            matches = [c for c in box.index.files_of if c.startswith(ref.lower())]
        if len(matches) == 1:
            return matches[0]
    raise ToolError(f"informed_by: {reference!r} is not a commit in the memory; use the commit "
                    f"ids or paths shown by {ToolName.LIST_ITEMS}")


BY_ROLE: dict[Role, Tool[ContributeArgs]] = {
    Role.WORKER: Tool(ToolName.CONTRIBUTE, Contribute, contribute),
    Role.FREE: Tool(ToolName.CONTRIBUTE, FreeContribute, contribute),
    Role.REVIEW: Tool(ToolName.CONTRIBUTE, ReviewContribute, contribute),
    Role.BLIND: Tool(ToolName.CONTRIBUTE, BlindContribute, contribute),
    Role.INDEPENDENT: Tool(ToolName.CONTRIBUTE, AttemptContribute, contribute),
    Role.BEST_OF_N: Tool(ToolName.CONTRIBUTE, AttemptContribute, contribute),
}
"""`contribute` in each role: the handler is one, the model is the role's."""
