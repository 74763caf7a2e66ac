"""How an episode ends: the final actions `contribute`, `nominate` and `abstain`, as the
methods `Toolbox` inherits, and the `Final` each returns. A contribution is checked whole here
(its kind, what it reviews and the verdict, the commits it cites) before anything is written;
a candidate that answers a critical review says so in its title. A contribution is made on main
as the step's view shows it (its parent), so it may extend work that landed after the episode
started, and the merger composes it like any other."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gitswarm.core.status import Status
from gitswarm.core.stops import Stop
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import VERDICTS
from gitswarm.engine.plan import EpisodePlan
from gitswarm.engine.toolargs import ToolError
from gitswarm.engine.toolmodels import Abstain, ContributeArgs, Nominate
from gitswarm.problems.model import Kind

if TYPE_CHECKING:
    from gitswarm.engine.shell import Shell

KINDS = ("note", "lemma", "attempt", "review", "code", "summary")
"""The kinds of a contribution (`toolmodels.Kind`, the schema's); each role's are its plan's
(`EpisodePlan.kinds`)."""


@dataclass(frozen=True)
class Final:
    """How an episode ends: `contribute` or `nominate` (with the contribution to commit),
    `abstain`, `failed` (the step limit, the wall clock, replies without tool calls) or
    `stopped` (cut short, or a cap reached: then `stop`, the run's stop it calls for)."""

    action: Status
    contribution: Contribution | None = None
    reason: str = ""
    stop: Stop | None = None


class FinalActions:
    """The final actions of an episode's `Toolbox`: what it staged becomes one contribution."""

    index: MemoryIndex
    ep: EpisodePlan
    staged: dict[str, str]
    deleted: set[str]
    code: Shell
    """The episode's shell (a reproduce problem's candidate is checked by it)."""

    @property
    def at(self) -> str:
        """The commit of main the step's view shows, where the contribution is made (the start
        commit for an episode that sees no one's work: an isolated one, a blind review)."""
        return self.index.seen_tip or self.ep.start_commit

    @property
    def base(self) -> str:
        return f"problems/{self.ep.problem_id}"

    async def tool_contribute(self, args: ContributeArgs) -> Final:
        kind, reviews, verdict = args.kind, args.reviews, args.verdict
        if kind not in self.ep.kinds:
            raise ToolError(f"kind must be one of {', '.join(self.ep.kinds)} in this episode")
        self.staged, self.deleted = await self.code.rebase(self.at, self.staged, self.deleted)
        if self.ep.review is not None:  # a review episode commits its review alone
            self._reviews_only()
        if not self.staged and not self.deleted:
            raise ToolError("nothing is staged: write_file first, then contribute")
        if kind == "code" and self.ep.kind == Kind.REPRODUCE and (  # a candidate is code/<slug>/ with compile.sh
                problem := await self.code.codebase_problem(self.staged, self.deleted, self.at)):
            raise ToolError(problem)
        reviewed = self._reviewed(kind, reviews, verdict)
        if reviewed:  # a review changes nothing of what it reviews, whoever writes it
            self._reviews_only()
        cited = [*(reviewed[:1] if reviewed else []), *(self._commit(ref) for ref in args.informed_by)]
        files, title = dict(self.staged), args.title.strip()[:100]
        if kind in ("attempt", "code"):
            title = self._revision_title(cited, title)
        if reviewed:
            files.update(self._stamped(*reviewed, str(verdict)))
        of, said = (reviewed[0], str(verdict)) if reviewed else ("", "")  # a review's: what it reviews, its verdict
        return Final(Status.CONTRIBUTE, replace(self._contribution(kind, title, args.summary, files, cited,
                                                              args.self_assessment, reviews=of, verdict=said),
                                           deleted=tuple(sorted(self.deleted))))

    def _reviews_only(self) -> None:
        """Keep the staged review files alone: no other file, no deletion."""
        self.staged, self.deleted = {p: t for p, t in self.staged.items() if p.startswith("reviews/")}, set()

    def _revision_title(self, cited: list[str], title: str) -> str:
        """The title of a candidate that cites a critical review: it says what it revises and
        which review it answers, so `git log` tells a revision from the attempt it replaces."""
        for candidate, by in self.index.problems[self.ep.problem_id].reviews.items():
            for review in by.values():
                found = self.index.resolve(self.ep.problem_id, candidate) if review.commit in cited else None
                if review.verdict == "critical" and found is not None:
                    return f"revises {found[1]} (critical review {review.commit[:7]}): {title}"
        return title

    def _stamped(self, commit: str, path: str, verdict: str) -> dict[str, str]:
        """The staged review files, each headed by front matter naming what it reviews, its
        verdict and this episode: how `gitswarm status` finds the review's commit from main's
        tree (op `<episode>-final`), whose trailers it then trusts."""
        head = f"---\nreviews: {commit}\npath: {path}\nverdict: {verdict}\nepisode: {self.ep.episode}\n---\n\n"
        return {rel: head + text for rel, text in self.staged.items() if rel.startswith("reviews/")}

    def _reviewed(self, kind: str, reviews: str | None, verdict: str | None) -> tuple[str, str] | None:
        """The commit and path a review reviews (None for other kinds, which ignore both), its
        verdict checked. A review of one's own attempt is committed, but the index does not count it."""
        if kind != "review":
            return None
        if not reviews or not reviews.strip():
            raise ToolError("a review names the attempt it reviews: give reviews=<its path (attempts/... "
                            "or code/...) or commit id>")
        if verdict not in VERDICTS:
            raise ToolError(f"a review ends with a verdict: give verdict as one of {', '.join(VERDICTS)} "
                            "(pass: no issue; gaps: justification gaps only; critical: a critical error)")
        if not any(rel.startswith("reviews/") for rel in self.staged):
            raise ToolError("stage the review itself under reviews/ (e.g. reviews/<name>.md), then contribute")
        if self.ep.review is not None:
            return self._assigned(reviews)
        found = self.index.resolve(self.ep.problem_id, reviews)
        if found is None:
            raise ToolError(f"reviews: no attempt or program {reviews!r} of this problem in the memory; "
                            "give its path (attempts/... or code/...) or commit id")
        return found

    def _assigned(self, reviews: str) -> tuple[str, str]:
        """The commit and path of a review episode's candidate, which `reviews` must name (by
        its path or a prefix of its commit id of 7 characters or more)."""
        assert self.ep.review is not None
        path, commit = self.ep.review.path, self.ep.review.commit
        named = reviews.strip().removeprefix(f"{self.base}/").rstrip("/")
        if named != path and not (len(named) >= 7 and commit.startswith(named.lower())):
            raise ToolError(f"reviews: this episode reviews {path} (commit {commit[:12]}), the candidate it was "
                            f"assigned, not {reviews!r}; name it, or abstain")
        return commit, path

    async def tool_nominate(self, args: Nominate) -> Final:
        candidate, rationale = args.candidate, args.rationale
        found = self.index.resolve(self.ep.problem_id, candidate)
        if found is None:
            raise ToolError(f"no attempt or program {candidate!r} of this problem in the memory; "
                            "give its path (attempts/... or code/...) or commit id")
        commit, path = found
        text = f"---\ncandidate: {commit}\npath: {path}\n---\n\n{rationale.strip()}\n"
        files = {f"nominations/{self.ep.episode}.md": text}
        return Final(Status.NOMINATE, self._contribution("nomination", f"nominate {path}", rationale, files,
                                                    [commit], "", candidate=commit))

    async def tool_abstain(self, args: Abstain) -> Final:
        return Final(Status.ABSTAIN, reason=args.reason.strip()[:500])

    def _contribution(self, kind: str, title: str, summary: str, files: dict[str, str], cited: list[str],
                      assessment: str, candidate: str = "", reviews: str = "", verdict: str = "") -> Contribution:
        """The episode's contribution, with its kind's own fields (`candidate`, `reviews`, `verdict`)."""
        return Contribution(
            problem=self.ep.problem_id, episode=self.ep.episode, worker=self.ep.worker, kind=kind,
            title=title.strip()[:160] or kind, files=dict(files), parent=self.at,
            op=f"{self.ep.episode}-final", summary=summary.strip()[:2000],
            informed_by=tuple(dict.fromkeys(cited)), self_assessment=assessment.strip()[:200],
            candidate=candidate, reviews=reviews, verdict=verdict)

    def _commit(self, reference: str) -> str:
        """A cited commit, named by an item's path or by (a prefix of) its id."""
        ref = str(reference).strip()
        items = self.index.problems[self.ep.problem_id].items
        rel = ref.removeprefix(f"{self.base}/")
        if rel in items:
            return items[rel]
        if len(ref) >= 7:
            with self.index.lock:  # files_of is the live index's (a step's view shares it)
                matches = [c for c in self.index.files_of if c.startswith(ref.lower())]
            if len(matches) == 1:
                return matches[0]
        raise ToolError(f"informed_by: {reference!r} is not a commit in the memory; use the commit "
                        "ids or paths shown by list_items")

