"""The state the tools of one episode share (`Toolbox`): the step's view of main, the files the
episode staged and deleted, its code tree (`engine.shell`), and `call`, which checks a call's
arguments by its tool's model in the episode's role and runs its handler. Every refusal is a
`ToolError` the agent reads (`tool.sandbox_faults` says when the machine, not the program, failed)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine import shell
from gitswarm.engine.plan import EpisodePlan, ToolName
from gitswarm.engine.references import References
from gitswarm.engine.runview import RunView
from gitswarm.engine.tools.args import ToolError, check, with_notes
from gitswarm.engine.tools.registry import of_episode
from gitswarm.engine.tools.tool import Final
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.resources import data_dir


@dataclass
class Toolbox:
    """The tools of one episode, bound to its problem and to the step's view of main: `index` is
    that view (`MemoryIndex.pinned`, taken again at each step by `look`), and every tool of the
    step reads main at its commit, `at`, so what the state names the tools can read and run."""

    store: Store
    index: MemoryIndex
    view: RunView
    ep: EpisodePlan
    sandbox: anyio.CapacityLimiter
    references: References | None = None
    staged: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    """`code/...` files of the view's commit a shell command removed."""
    first: set[str] | None = None
    """The item commits of the episode's first view: those not in it are new since it started."""

    def __post_init__(self) -> None:
        only = self.ep.review.path if self.ep.review and not self.ep.powers.sees_memory else None
        self.code = shell.Shell(self.store, self.ep, self.sandbox, self.references, only)

    @property
    def memory(self) -> Memory:
        """The store's memory, for work on the git thread (`store.run`)."""
        return self.store.memory

    @property
    def at(self) -> str:
        """The commit of main the step's view shows, where the tools read and a contribution is
        made (the start commit for an episode that sees no one's work: an isolated one, a
        blind review)."""
        return self.index.seen_tip or self.ep.start_commit

    @property
    def base(self) -> str:
        return f"problems/{self.ep.problem_id}"

    def look(self, view: MemoryIndex) -> None:
        """Take the step's view of main (`MemoryIndex.pinned`); the first one marks what was there
        when the episode started."""
        self.index = view
        if self.first is None:
            self.first = set(view.problems[self.ep.problem_id].items.values())

    def new_since_start(self, commit: str) -> bool:
        return self.first is not None and commit not in self.first

    def new_items(self) -> int:
        """Items of the view that landed after the episode started."""
        return sum(self.new_since_start(c) for c in self.index.problems[self.ep.problem_id].items.values())

    def close(self) -> None:
        """Remove the episode's code tree from disk (made by its first `shell` call)."""
        self.code.close()

    def staged_names(self) -> list[str]:
        """What the contribution would write, and delete, for the state header."""
        return sorted([*self.staged, *(f"{p} (deleted)" for p in self.deleted)])

    async def call(self, name: str, args: object) -> str | Final:
        """Run one call of the model, its arguments (any JSON value) checked against the tool's
        schema first; a text result (or a refusal) ends with notes on what was dropped or
        read differently."""
        tools = of_episode(self.ep)
        if name not in tools:
            raise ToolError(f"there is no tool {name!r}")
        tool = tools[ToolName(name)]
        checked = check(name, tool.args, args)
        try:
            result = await tool.run(self, checked.arguments)
        except ToolError as exc:
            raise ToolError(with_notes(str(exc), checked.notes)) from None
        return result if isinstance(result, Final) else with_notes(result, checked.notes)

    def relative(self, path: str) -> str:
        """`path` relative to the problem folder, refused outside it."""
        rel = str(path).strip().removeprefix("./").removeprefix(f"{self.base}/")
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise ToolError(f"{path!r}: give a path inside your problem folder, e.g. notes/idea.md")
        return rel

    async def hide(self) -> tuple[Path, ...]:
        """What a program must not see (`_hidden`), and for a reproduce problem every other copy
        of its reference this machine holds: only the reference on PATH is offered."""
        found = await self.references.copies(self.ep.problem_id) if self.references is not None else ()
        return (*self._hidden(), *found)

    def _hidden(self) -> tuple[Path, ...]:
        """What a program must not see: the run (grades, ledger) and every problem file with
        hidden parts — this run's set and the sets shipped with gitswarm."""
        folders = {self.memory.path.resolve(), Path(self.view.config.problems).resolve()}
        with contextlib.suppress(FileNotFoundError):
            folders.add(data_dir("problems").resolve())
        return tuple(sorted(folders))

    def contribution(self, kind: str, title: str, summary: str, files: dict[str, str], cited: list[str],
                     assessment: str, candidate: str = "", reviews: str = "", verdict: str = "") -> Contribution:
        """The episode's contribution on the view's commit, with its kind's own fields
        (`candidate`, `reviews`, `verdict`)."""
        return Contribution(
            problem=self.ep.problem_id, episode=self.ep.episode, worker=self.ep.worker, kind=kind,
            title=title.strip()[:160] or kind, files=dict(files), parent=self.at,
            op=f"{self.ep.episode}-final", summary=summary.strip()[:2000],
            informed_by=tuple(dict.fromkeys(cited)), self_assessment=assessment.strip()[:200],
            candidate=candidate, reviews=reviews, verdict=verdict)
