"""The read model's types: frozen, every field documented, each with its JSON form (`as_dict`).

Pure Python (no pygit2 at import), so the dashboard's reducer can use `STATES` freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from gitswarm.domain.candidate import Candidate
from gitswarm.domain.grade import Grade, describe
from gitswarm.domain.kinds import KIND_FOLDERS, Verification
from gitswarm.domain.rule import VERIFY
from gitswarm.domain.selection import Selection

if TYPE_CHECKING:
    from gitswarm.readmodel.workers import WorkerState

STATES = ("open", "in progress", "candidate", "nominated", "set aside", "settled", "selected")
"""A problem's states, in the order a problem moves through them (the dashboard only moves a
row forward in this order):

- open: nothing on main yet;
- in progress: notes, lemmas or reviews, but no attempt or code;
- candidate: at least one attempt or program;
- nominated: at least one nomination;
- set aside: the ledger says the no-progress rule set it aside (and it is not settled);
- settled: the selection rule has chosen its solution (a verified candidate with no verified
  rival, or with the nominations that settle it); no more episodes go there, and the run writes
  its SOLUTION.md when it stops;
- selected: SOLUTION.md is on main.
"""
FOLDERS = tuple(KIND_FOLDERS.values())
"""The item folders of `problems/<id>/`, as the memory writes them (the fields of `Counts`)."""


@dataclass(frozen=True)
class Counts:
    """Items below each item folder of `problems/<id>/` on main: files, and for `code` the
    codebases (`code/<slug>/`, one candidate each, whatever its files)."""

    notes: int = 0
    lemmas: int = 0
    attempts: int = 0
    reviews: int = 0
    code: int = 0

    @property
    def candidates(self) -> int:
        """Attempts and codebases: the ATTEMPTS column of status and the dashboard."""
        return self.attempts + self.code

    @property
    def work(self) -> int:
        """Every item file."""
        return sum(self.as_dict().values())

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class ProblemState:
    """Where one problem stands, from the index of main, main's tree, the ledger
    and the grades."""

    id: str
    kind: str
    """answer, proof, program, ... from the statement on main ("?" when it does not say)."""
    state: str
    """One of `STATES`."""
    counts: Counts
    candidates: tuple[Candidate, ...]
    """Every candidate on main and every one a nomination, a grade or a review names; the most
    nominated first, then by path."""
    selected: Selection | None
    """What SOLUTION.md on main says, or None before the run selected one."""
    leading: str | None
    """The commit `domain.selection.choose` selects now from main's nominations, reviews and
    the referee's scores (None when no candidate is verified and none is nominated): the
    selection a stop would write."""
    grade: Grade | None
    """The grade shown (the package docstring's rule), or None."""
    verified: bool | None = None
    """Whether the candidate it stands on (the selected one, else the leading one) is verified;
    None when there is none."""
    verify: int = VERIFY
    """K of the run's rule: the `pass` reviews a candidate needs (0: none, plain plurality)."""

    @property
    def nominations(self) -> dict[str, int]:
        """Nominations per candidate commit (nominated candidates only)."""
        return {c.commit: c.nominations for c in self.candidates if c.commit and c.nominations}

    @property
    def nomination_total(self) -> int:
        return sum(c.nominations for c in self.candidates)

    @property
    def selected_path(self) -> str | None:
        return self.selected.path if self.selected else None

    @property
    def standing(self) -> Candidate | None:
        """The candidate it stands on: the selected one, else the leading one."""
        commit = self.selected.candidate if self.selected else self.leading
        return next((c for c in self.candidates if commit and c.commit == commit), None)

    @property
    def verification(self) -> str:
        """"verified", "unverified", "rejected by reviews" (it has a critical review: every
        candidate had one), "not required" (K = 0) or "-" (no candidate to judge)."""
        if self.verify == 0 and self.verified is not None:
            return "not required"
        if self.verified is None:
            return "-"
        if self.verified:
            return Verification.VERIFIED.value
        standing = self.standing
        rejected = bool(self.selected and self.selected.rejected) or bool(standing and standing.reviews.critical)
        return (Verification.REJECTED if rejected else Verification.UNVERIFIED).value

    @property
    def grade_text(self) -> str:
        """The grade as a table cell ("-" when there is none)."""
        return describe(self.grade)

    def as_dict(self) -> dict:
        """The JSON form `status --json` and the report share."""
        return {"id": self.id, "kind": self.kind, "state": self.state, "counts": self.counts.as_dict(),
                "nominations": self.nomination_total, "top_candidate": self.leading,
                "selected": self.selected_path,
                "selected_commit": self.selected.candidate if self.selected else None,
                "verification": self.verification, "verify": self.verify,
                "grade": self.grade_text if self.grade else None,
                "candidates": [c.as_dict() for c in self.candidates]}


@dataclass(frozen=True)
class RunTotals:
    """The run's totals: the ledger's `Totals` (every call, the merger's and failed ones too)."""

    run: str
    """The run id."""
    episodes: int
    """Worker episodes in any state."""
    charged: int
    """Episodes that contributed or nominated."""
    tokens_in: int
    """Input tokens, cached ones included."""
    cache_read: int
    """Of `tokens_in`, read from the provider's prompt cache."""
    cache_write: int
    """Of `tokens_in`, written to it."""
    reasoning: int
    """Of `tokens_out`, spent thinking."""
    tokens_out: int
    """Output tokens, reasoning included."""
    calls: int
    """Model calls that reached the provider, failed ones included."""
    failed_calls: int
    """Of `calls`, those that gave no usable reply."""
    estimated_tokens: int
    """Of the tokens, those litellm counted because the provider's reply carried no count."""
    known_cost_usd: float
    """USD of the calls that had a price."""
    cost_known: bool
    """Every call had a price."""
    pending_branches: int
    """Episode branches not yet composed into main."""
    failed: dict[str, int] = field(default_factory=dict)
    """Failed episodes by class (`domain.episode.Failure`: provider, model, engine)."""

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def cost_usd(self) -> float | None:
        """USD spent, or None when some call had no price."""
        return self.known_cost_usd if self.cost_known else None

    def parts(self) -> dict[str, int]:
        """The parts of the usage, in `domain.episode.USAGE_PARTS` order (`Totals.parts()`)."""
        names = ("tokens_in", "cache_read", "cache_write", "reasoning", "tokens_out", "calls", "failed_calls",
                 "estimated_tokens")
        return {name: getattr(self, name) for name in names}

    def as_dict(self) -> dict:
        """The JSON form of `status --json`'s totals."""
        return {"run": self.run, "episodes": self.episodes, "charged": self.charged, "tokens": self.tokens,
                "cost_usd": round(self.known_cost_usd, 6) if self.cost_known else None,
                "pending_branches": self.pending_branches, **self.parts(), "failed_episodes": dict(self.failed)}


@dataclass(frozen=True)
class RunState:
    """The whole read model: the run's totals and every problem's state, in the run's order."""

    totals: RunTotals
    problems: tuple[ProblemState, ...]
    workers: tuple[WorkerState, ...] = ()
    """In a run on a git remote, every worker process (`readmodel.workers`); else none."""

    def problem(self, pid: str) -> ProblemState:
        return next(p for p in self.problems if p.id == pid)

    def as_dict(self) -> dict:
        shown = {"totals": self.totals.as_dict(), "problems": [p.as_dict() for p in self.problems]}
        return shown | ({"workers": [w.as_dict() for w in self.workers]} if self.workers else {})
