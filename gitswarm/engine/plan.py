"""What kind of episode is running, decided once, when the scheduler starts it: its `Role`
(from the run's settings, here and nowhere else), and the `EpisodePlan` the episode loop, the
tools, the prompts and the reviewing code read instead of the settings: the start commit and
what the episode may see, the model it runs on, its tools, its prompt templates and the kinds
it may contribute.

| role | who | sees | contributes |
|---|---|---|---|
| `worker` | a swarm episode (reviews open: it may review) | the memory | every kind, nominates |
| `free` | a swarm episode where reviews are assigned | the memory | every kind but review, nominates |
| `review` | an assigned review | the memory | its review |
| `blind` | a blind review | the problem's own files, its candidate | its review |
| `independent` | an independent attempt (isolation independent) | its statement and files | its attempt |
| `best-of-n` | a best-of-n attempt | its statement and files | its attempt |
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from gitswarm.domain.kinds import CONTRIBUTION_KINDS, KIND_FOLDERS
from gitswarm.domain.kinds import Kind as CommitKind
from gitswarm.problems.model import Kind

if TYPE_CHECKING:
    from gitswarm.engine.config import SolveConfig

CODE_KINDS = (Kind.PROGRAM, Kind.REPRODUCE)
"""Problems whose workers have a shell (`CODE_TOOLS`), and whose deliverable is a codebase."""


class ToolName(StrEnum):
    """The worker's tools, in the order they are offered: the one spelling of each name (its
    module is `engine/tools/<name>.py`, its texts are under its name in prompts/tools.yaml)."""

    LIST_ITEMS = "list_items"
    READ_FILE = "read_file"
    SEARCH = "search"
    IN_FLIGHT = "in_flight"
    ANNOUNCE = "announce"
    WRITE_FILE = "write_file"
    RUN_PYTHON = "run_python"
    SHELL = "shell"
    CONTRIBUTE = "contribute"
    NOMINATE = "nominate"
    ABSTAIN = "abstain"


FINAL_TOOLS = (ToolName.CONTRIBUTE, ToolName.NOMINATE, ToolName.ABSTAIN)
"""The tools that end an episode."""


CODE_TOOLS = (ToolName.SHELL,)
"""Tools offered only for problems of `CODE_KINDS`."""


class Role(StrEnum):
    """What kind of episode it is (the table in this module's docstring)."""

    WORKER = "worker"
    FREE = "free"
    REVIEW = "review"
    BLIND = "blind"
    INDEPENDENT = "independent"
    BEST_OF_N = "best-of-n"


@dataclass(frozen=True)
class Powers:
    """What one role may see and do."""

    tools: tuple[ToolName, ...]
    """The tools it is offered, in the order they are offered (`tools.registry` holds what
    each is in this role; `CODE_TOOLS` only for code problems)."""
    kinds: tuple[CommitKind, ...]
    """The kinds it may `contribute` (a review's: `review` alone), which its `contribute`
    offers and checks."""
    sees_memory: bool
    """It reads main as it grows (the index, the overview, the items): False for an episode
    that sees no one's work (an isolated attempt, a blind review), whose view stays its start."""
    sees_others: bool
    """It is told what the other episodes in flight do (their announcements, the state's
    advice, what the problem needs)."""
    writes: tuple[str, ...] | None
    """The folders it may stage files in; None: anywhere in its problem folder."""
    system: str
    """The template of its system prompt."""
    shows: str = "memory"
    """Its first prompt and state block: `memory` (`context.overview`, `context.header`: the
    memory overview and the run's state) or `candidate` (`reviewing.first_prompt`,
    `reviewing.header`: a blind review's candidate and assignment alone)."""
    on_reviewer: bool = False
    """It runs on the reviewer model (where the run has one)."""


_READ = (ToolName.LIST_ITEMS, ToolName.READ_FILE, ToolName.SEARCH, ToolName.IN_FLIGHT)
_WORK = (ToolName.WRITE_FILE, ToolName.RUN_PYTHON, ToolName.SHELL)
_END = (ToolName.CONTRIBUTE, ToolName.ABSTAIN)
_SWARM = (*_READ, ToolName.ANNOUNCE, *_WORK, ToolName.CONTRIBUTE, ToolName.NOMINATE, ToolName.ABSTAIN)
_SWARM_KINDS = tuple(k for k in CommitKind if k in CONTRIBUTION_KINDS and k != CommitKind.NOMINATION)
"""What `contribute` commits: every contribution kind but a nomination (`nominate`'s)."""
_REVIEW = (CommitKind.REVIEW,)
_ATTEMPT = (CommitKind.ATTEMPT, CommitKind.CODE)
"""An isolated attempt's kinds: its candidate alone (a note or a lemma there is charged and
read by no one: no other episode sees it)."""


def _folders(kinds: tuple[CommitKind, ...]) -> tuple[str, ...]:
    """The folders the items of `kinds` are written below."""
    return tuple(f"{KIND_FOLDERS[kind]}/" for kind in kinds)


_ISOLATED = Powers((ToolName.READ_FILE, ToolName.SEARCH, *_WORK, *_END), _ATTEMPT, sees_memory=False,
                   sees_others=False, writes=_folders(_ATTEMPT), system="attempt_system.md.j2")
POWERS: dict[Role, Powers] = {
    Role.WORKER: Powers(_SWARM, _SWARM_KINDS, sees_memory=True, sees_others=True, writes=None,
                        system="worker_system.md.j2"),
    Role.FREE: Powers(_SWARM, tuple(k for k in _SWARM_KINDS if k != CommitKind.REVIEW), sees_memory=True,
                      sees_others=True, writes=None, system="worker_system.md.j2"),
    Role.REVIEW: Powers((*_READ, *_WORK, *_END), _REVIEW, sees_memory=True, sees_others=True,
                        writes=_folders(_REVIEW), system="review_system.md.j2", on_reviewer=True),
    Role.BLIND: Powers((ToolName.READ_FILE, *_WORK, *_END), _REVIEW, sees_memory=False, sees_others=False,
                       writes=_folders(_REVIEW), system="review_system.md.j2", shows="candidate", on_reviewer=True),
    Role.INDEPENDENT: _ISOLATED,
    Role.BEST_OF_N: _ISOLATED,
}
"""Each role's powers."""


@dataclass(frozen=True)
class Assignment:
    """The candidate a review episode is assigned to check (`engine.reviewing`)."""

    path: str
    """`attempts/<file>` or `code/<slug>`."""
    commit: str
    blind: bool = False
    """It sees the problem's own files and this candidate alone, read at its commit."""


@dataclass(frozen=True)
class EpisodePlan:
    """One episode, as the scheduler starts it: who runs it, on what, from which memory state,
    in which role, on which model."""

    episode: str
    worker: str
    problem_id: str
    kind: str
    title: str
    start_commit: str
    """Main's tip as it started; the run's first commit for an isolated attempt; a blind
    review's candidate's commit."""
    executable: str | None = None
    """The documented name of the reference executable on the shell's PATH (reproduce
    problems); None when this process has no reference, and the prompt does not promise one."""
    role: Role = Role.WORKER
    review: Assignment | None = None
    """A review episode's candidate: it reviews that one or abstains."""
    model: str = ""
    """The model it calls (the record's; "" where the caller does not say: the run's)."""
    image: str | None = None
    """The container image the episode's programs run in (`Problem.image`), or None: the host's root."""
    reference_in_image: bool = False
    """The reference is the image's own `./executable` (`Problem.reference_in_image`)."""

    @property
    def powers(self) -> Powers:
        return POWERS[self.role]

    @property
    def code(self) -> bool:
        """A problem with a shell, whose deliverable is a codebase."""
        return self.kind in CODE_KINDS

    @property
    def tools(self) -> tuple[ToolName, ...]:
        """The tools it is offered, in order (`tool_names`)."""
        return tool_names(self.role, self.kind)

    @property
    def finals(self) -> tuple[ToolName, ...]:
        """Its tools that end the episode, in order (what the state block says to end with)."""
        return tuple(t for t in self.tools if t in FINAL_TOOLS)

    @property
    def deliverable(self) -> CommitKind:
        """The kind of its problem's candidates: `code` (a codebase `code/<slug>/`) for a code
        problem, in every role, else `attempt`."""
        return CommitKind.CODE if self.code else CommitKind.ATTEMPT

    @property
    def kinds(self) -> tuple[CommitKind, ...]:
        """The contribution kinds it may commit: its role's, where a candidate is its
        problem's deliverable alone (a code problem's attempt is a codebase)."""
        other = CommitKind.ATTEMPT if self.code else CommitKind.CODE
        return tuple(k for k in self.powers.kinds if k != other or self.role in (Role.WORKER, Role.FREE))

    def may_write(self, rel: str) -> bool:
        """Whether it may stage `rel` (relative to its problem folder)."""
        writes = self.powers.writes
        return writes is None or rel.startswith(writes)


def tool_names(role: Role, kind: str | None) -> tuple[ToolName, ...]:
    """The tools an episode of `role` on a problem of `kind` is offered (None: every tool of
    the role), in order: `CODE_TOOLS` only on a code problem. The one list an episode's
    schemas (`tools.specs`) and its calls (`Toolbox.call`) come from."""
    return tuple(t for t in POWERS[role].tools if kind is None or kind in CODE_KINDS or t not in CODE_TOOLS)


def role_for(cfg: SolveConfig, review: Assignment | None) -> Role:
    """The role of an episode of a run with settings `cfg`: a review's when it was assigned
    one, else its arm's. The one place the engine reads the run's modes for an episode."""
    if review is not None:
        return Role.BLIND if review.blind else Role.REVIEW
    if cfg.isolation == "best-of-n":
        return Role.BEST_OF_N
    if cfg.isolation == "independent":
        return Role.INDEPENDENT
    return Role.FREE if cfg.assigns_reviews else Role.WORKER


def arm(cfg: SolveConfig) -> Role:
    """The role of the run's episodes that are not reviews: its arm (`INDEPENDENT` selects by
    the majority of answers and writes no review)."""
    return role_for(cfg, None)


def summaries_read(cfg: SolveConfig) -> bool:
    """Whether an episode of the run reads a problem's SUMMARY.md: not in an isolated arm,
    whose attempts see their problem's own files alone (the merger writes none there)."""
    return POWERS[arm(cfg)].sees_memory


def plan(cfg: SolveConfig, episode: str, worker: str, problem: tuple[str, str, str, str | None],
         starts: tuple[str, str], review: Assignment | None,
         image: tuple[str | None, bool] = (None, False)) -> EpisodePlan:
    """The plan of an episode starting now: `problem` is (id, kind, title, executable),
    `starts` (main's tip, the run's first commit), `image` (the container image its programs
    run in, whether the reference is the image's own `./executable`)."""
    role = role_for(cfg, review)
    powers = POWERS[role]
    tip, root = starts
    start = review.commit if review is not None and review.blind else tip if powers.sees_memory else root
    model = cfg.reviewer if powers.on_reviewer else cfg.model
    pid, kind, title, executable = problem
    return EpisodePlan(episode, worker, pid, kind, title, start, executable, role, review, model, *image)
