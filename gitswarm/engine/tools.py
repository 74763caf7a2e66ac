"""The worker's tools (offered by kind and role, `toolspecs`): read the memory as the step's
view shows it, stage files, run code, and end the episode with one final action. Every refusal
is a `ToolError` the agent reads; a call's arguments are checked by the tool's argument model
first (`toolmodels`, `toolargs`). `HANDLERS` is what runs each tool.
Program and reproduce problems also get `shell` (`CODE_TOOLS`): a command in the episode's
code tree (`workspace`), whose changes become staged files and deletions."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import CANDIDATE_FOLDERS, candidate_path
from gitswarm.engine import context, reviewing, shell
from gitswarm.engine.finals import KINDS, Final, FinalActions
from gitswarm.engine.plan import CODE_TOOLS, EpisodePlan
from gitswarm.engine.references import References
from gitswarm.engine.runview import RunView
from gitswarm.engine.toolargs import ToolError, check, with_notes
from gitswarm.engine.toolmodels import (
    ROLES,
    Announce,
    InFlight,
    ListItems,
    ReadFile,
    RunPython,
    RunShell,
    Search,
    WriteFile,
)
from gitswarm.engine.toolspecs import tool_schemas
from gitswarm.memory.errors import PathRejected
from gitswarm.memory.paths import check_path
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.resources import data_dir, render
from gitswarm.sandbox import SandboxError, SandboxResult

PAGE = 8000
SEARCH_ITEMS = 2000
"""Items one search reads, newest first: a bound on the git thread's time for one call."""
SEARCH_HITS = 40
__all__ = ["CODE_TOOLS", "KINDS", "Final", "ToolError", "Toolbox", "tool_schemas"]
@contextlib.contextmanager
def _sandbox_faults(tool: str) -> Iterator[None]:
    """The one boundary for faults of the sandbox in the tools that run programs: the model
    reads that the machine, not its program, failed (never an engine error of the episode)."""
    try:
        yield
    except SandboxError as exc:
        raise ToolError(f"{tool} could not start a program on this machine (a fault of the sandbox, "
                        f"not of your code): {str(exc).split(';')[0][:300]}") from None


@dataclass
class Toolbox(FinalActions):
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
        model = ROLES[self.ep.role].get(name)
        if model is None or name not in self.ep.tools:
            raise ToolError(f"there is no tool {name!r}")
        checked = check(name, model, args)
        try:
            result = await HANDLERS[name](self, checked.arguments)
        except ToolError as exc:
            raise ToolError(with_notes(str(exc), checked.notes)) from None
        return result if isinstance(result, Final) else with_notes(result, checked.notes)

    async def tool_list_items(self, args: ListItems) -> str:
        kind, offset = args.kind, args.offset
        rows = [self._row(path, commit, files) for path, commit, files in self.listed()
                if kind is None or path.startswith(f"{kind}s/") or (kind == "code" and path.startswith("code/"))]
        page = rows[offset: offset + 100]
        more = f"\n... {len(rows) - offset - 100} more: call again with offset={offset + 100}"
        return "\n".join(page) + (more if len(rows) > offset + 100 else "") if page else "no items"

    def listed(self) -> list[tuple[str, str, int]]:
        """(path, commit, files) of the problem's items, oldest first, a codebase `code/<slug>` as
        one item (the commit that wrote it last, and how many files it holds)."""
        problem = self.ep.problem_id
        codebases = self.index.candidates(problem)
        found: dict[str, tuple[str, str, int]] = {}
        for path, commit in self.index.problems[problem].items.items():
            key = candidate_path(path)
            if key.startswith("code/"):
                files = found[key][2] + 1 if key in found else 1
                found[key] = (key, codebases.get(key, commit), files)
            else:
                found[key] = (path, commit, 1)
        return list(found.values())

    def _row(self, path: str, commit: str, files: int) -> str:
        """One item of `list_items`: its commit, citations, and whose and how new it is; a
        candidate's counted reviews."""
        author = self.index.authors.get(commit) or "?"
        marks = [f"{files} files" if path.startswith("code/") else "",
                 f"by {author}" + (" (yours)" if author == self.ep.worker else ""),
                 self.index.mark(commit), "new since your episode started" if self.new_since_start(commit) else ""]
        if path.startswith(CANDIDATE_FOLDERS):
            marks.append("reviews: " + context.reviews_text(self.index, self.ep.problem_id, commit))
        shown = "; ".join(m for m in marks if m)
        return f"{path}  commit {commit[:12]}  cited by {self.index.cited[commit]}" + (f"  ({shown})" if shown else "")

    async def tool_read_file(self, args: ReadFile) -> str:
        rel, offset = self._relative(args.path), args.offset
        if not reviewing.readable(self.ep, rel):
            raise ToolError(f"{rel}: a blind review reads the problem's own files (statement.md, docs/, starter/) "
                            f"and its candidate, {self.ep.review.path if self.ep.review else ''}, alone")
        staged = self.staged.get(rel)
        data = staged.encode() if staged is not None else await self.store.read_file(f"{self.base}/{rel}", self.at)
        if data is None:
            return await self._folder(rel)
        text = data.decode("utf-8", "replace")
        page = text[offset: offset + PAGE]
        if offset + PAGE < len(text):
            page += f"\n[... {len(text) - offset - PAGE} more characters: read_file offset={offset + PAGE}]"
        return render("tool_result.md.j2", fenced=True, source=f"{self.base}/{rel}", text=page)

    async def _folder(self, rel: str) -> str:
        """`read_file` on a folder: the files in it (the view's and those staged), with their
        sizes; a path that is neither is refused, saying how to find what there is."""
        folder = rel.rstrip("/") + "/"
        found = {} if not reviewing.readable(self.ep, folder) else await self.store.run(self._sizes, folder)
        found |= {p: len(t.encode()) for p, t in self.staged.items() if p.startswith(folder)}
        if not found:
            hint = "list_items shows the memory's items" if "list_items" in self.ep.tools else \
                "your first prompt lists the problem's own files"
            raise ToolError(f"no file or folder {rel!r} in problems/{self.ep.problem_id}/ (commit {self.at[:12]}); "
                            f"read_file on a folder (e.g. docs) lists its files; {hint}")
        rows = "\n".join(f"{path} ({size} bytes)" for path, size in sorted(found.items()))
        return render("tool_result.md.j2", fenced=True, source=f"{self.base}/{folder}", text=rows)

    def _sizes(self, folder: str) -> dict[str, int]:
        """The files below `folder` of the problem on the view's commit, by path relative to the
        problem folder, with their sizes (git thread)."""
        paths = self.memory.files_under(f"{self.base}/{folder}", self.at)
        return {p.removeprefix(f"{self.base}/"): len(self.memory.read_file(p, self.at) or b"") for p in paths}

    async def tool_search(self, args: Search) -> str:
        needle = args.query.lower().strip()
        if not needle:
            raise ToolError("give a non-empty query")
        items = list(self.index.problems[self.ep.problem_id].items)
        paths = ["SUMMARY.md", *reversed(items[-SEARCH_ITEMS:])]  # newest first
        hits = await self.store.run(self._search_all, paths, needle)
        text = "\n".join(hits) or "no matches"
        if len(items) > SEARCH_ITEMS:
            text += (f"\n(searched the newest {SEARCH_ITEMS} of {len(items)} items; list_items with an "
                     "offset reaches the older ones)")
        return render("tool_result.md.j2", fenced=True, source="search results", text=text)

    def _search_all(self, items: list[str], needle: str) -> list[str]:
        """`_search` over the problem's own files (its statement, documentation and starter
        files), then `items` (git thread)."""
        own = [f["path"] for f in context.own_files(self.memory, self.ep.problem_id, self.at)]
        return self._search(["statement.md", *own, *items], needle)

    def _search(self, paths: list[str], needle: str) -> list[str]:
        """Lines containing `needle`, up to SEARCH_HITS; one git-thread call, not one per file."""
        hits: list[str] = []
        for path in paths:
            data = self.memory.read_file(f"{self.base}/{path}", self.at)
            for n, line in enumerate((data or b"").decode("utf-8", "replace").splitlines(), 1):
                if needle in line.lower():
                    hits.append(f"{path}:{n}: {line.strip()[:200]}")
                    if len(hits) >= SEARCH_HITS:
                        return hits
        return hits

    async def tool_in_flight(self, args: InFlight) -> str:
        here = self.view.others_on(self.ep.problem_id, self.ep.worker)
        elsewhere = [f"{w}: {a}" for w, a in self.view.announcements.items()
                     if w != self.ep.worker and not a.startswith(f"{self.ep.problem_id}: ")]
        return render("in_flight.md.j2", problem=self.ep.problem_id, here=here, elsewhere=elsewhere)

    async def tool_announce(self, args: Announce) -> str:
        said = args.intent.strip().removeprefix(f"{self.ep.problem_id}:").strip()  # the prefix once
        self.view.announce(self.ep.worker, f"{self.ep.problem_id}: {said[:160]}")
        return "announced"

    async def tool_write_file(self, args: WriteFile) -> str:
        rel, content = self._relative(args.path), args.content
        if args.append:
            content = self.staged.get(rel, "") + content
        if rel.startswith("nominations/"):
            raise ToolError("nominations are made with the nominate action, not written")
        if not self.ep.may_write(rel):
            raise ToolError(render("write_refused.md.j2", path=rel, review=self.ep.review is not None,
                                   folders=self.ep.powers.writes).strip())
        try:
            check_path(rel, self.memory.limits)
        except PathRejected as exc:
            raise ToolError(exc.reason) from None
        size = len(content.encode("utf-8"))  # `toolargs` refused a lone surrogate
        if "\x00" in content:
            raise ToolError("the content contains NUL characters; write text")
        if size > self.memory.limits.max_file_bytes:
            raise ToolError(f"the file is larger than {self.memory.limits.max_file_bytes} bytes")
        if rel not in self.staged and len(self.staged) >= self.memory.limits.max_files:
            raise ToolError(f"at most {self.memory.limits.max_files} files in one contribution")
        self.staged[rel] = content
        self.deleted.discard(rel)
        return f"staged {rel} ({len(content)} characters); {len(self.staged)} file(s) staged"

    async def tool_run_python(self, args: RunPython) -> str:
        from gitswarm.sandbox import Limits, programs_in, run

        files = {"main.py": args.code.encode()}
        for path, text in self.staged.items():
            if path.startswith("code/"):
                files[path.split("/", 2)[-1]] = text.encode()
        limits = Limits(wall_seconds=30, cpu_seconds=20, memory_bytes=1 << 30)
        hide = await self._hide()

        def python() -> SandboxResult:  # in the problem's image (its python3), where it names one
            with programs_in(self.ep.image):
                return run([sys.executable, "main.py"], files=files, limits=limits, hide=hide)

        with _sandbox_faults("run_python"):  # the standard library only: no package is declared
            result = await anyio.to_thread.run_sync(python, limiter=self.sandbox)
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        return f"{status}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"

    async def tool_shell(self, args: RunShell) -> str:
        if not args.command.strip():
            raise ToolError("give a bash command")
        with _sandbox_faults("shell"):
            done = await self.code.run(args.command, args.timeout, self.staged, self.deleted, await self._hide(),
                                       self.at)
        self.staged, self.deleted = done.staged, done.deleted
        return done.text

    async def _hide(self) -> tuple[Path, ...]:
        """What a program must not see (`_hidden`), and for a reproduce problem every other copy
        of its reference this machine holds: only the reference on PATH is offered."""
        found = await self.references.copies(self.ep.problem_id) if self.references is not None else ()
        return (*self._hidden(), *found)

    def _hidden(self) -> tuple[Path, ...]:
        """What a program must not see: the run (grades, ledger) and every problem file with
        hidden parts — this run's set and the sets shipped with gitswarm."""
        folders = {self.memory.path.resolve(), Path(self.ep.terms.problems).resolve()}
        with contextlib.suppress(FileNotFoundError):
            folders.add(data_dir("problems").resolve())
        return tuple(sorted(folders))

    def _relative(self, path: str) -> str:
        rel = str(path).strip().removeprefix("./").removeprefix(f"{self.base}/")
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise ToolError(f"{path!r}: give a path inside your problem folder, e.g. notes/idea.md")
        return rel


Handler = Callable[[Toolbox, Any], Awaitable[str | Final]]
HANDLERS: dict[str, Handler] = {
    "list_items": Toolbox.tool_list_items, "read_file": Toolbox.tool_read_file, "search": Toolbox.tool_search,
    "in_flight": Toolbox.tool_in_flight, "announce": Toolbox.tool_announce, "write_file": Toolbox.tool_write_file,
    "run_python": Toolbox.tool_run_python, "shell": Toolbox.tool_shell, "contribute": Toolbox.tool_contribute,
    "nominate": Toolbox.tool_nominate, "abstain": Toolbox.tool_abstain,
}
"""What runs each tool, by name: a `Toolbox` method given the arguments its model checked
(`toolmodels.ROLES`: which model, in each role)."""
