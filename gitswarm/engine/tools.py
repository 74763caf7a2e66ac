"""The worker's tools: read the memory as of the episode's start, stage files, run code, and
end the episode with one final action. Every refusal is a `ToolError` the agent reads; a
call's arguments are checked against the tool's schema first (`toolargs`).
Program and reproduce problems also get `shell` (`CODE_TOOLS`): a command in the episode's
code tree (`workspace`), whose changes become staged files and deletions."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import anyio
import yaml

from gitswarm.engine import shell
from gitswarm.engine.context import CODE_KINDS, EpisodeInfo, RunView
from gitswarm.engine.finals import ISOLATED, KINDS, Final, FinalActions, foreign
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.index import MemoryIndex
from gitswarm.engine.references import References
from gitswarm.engine.toolargs import ToolError, check_arguments, with_notes
from gitswarm.memory.errors import PathRejected
from gitswarm.memory.paths import check_path
from gitswarm.memory.repo import Memory
from gitswarm.resources import data_dir, render
from gitswarm.sandbox import SandboxError

PAGE = 8000
SEARCH_ITEMS = 2000
"""Items one search reads, newest first: a bound on the git thread's time for one call."""
SEARCH_HITS = 40
CODE_TOOLS = ("shell",)
"""Tools offered only for problems of `CODE_KINDS`."""
__all__ = ["CODE_TOOLS", "KINDS", "Final", "ToolError", "Toolbox", "tool_schemas"]


@cache
def tool_schemas(kind: str | None = None) -> list[dict]:
    """The tools a problem of `kind` gets (None: every tool), in the OpenAI function-calling
    format, from prompts/tools.yaml. One list per kind, so a run's requests share prefixes."""
    specs = yaml.safe_load((data_dir("prompts") / "tools.yaml").read_text(encoding="utf-8"))
    offered = [s for s in specs if kind is None or kind in CODE_KINDS or s["name"] not in CODE_TOOLS]
    return [{"type": "function", "function": spec} for spec in offered]


@cache
def _parameters() -> dict[str, dict]:
    """Each tool's argument schema, by tool name."""
    return {tool["function"]["name"]: tool["function"]["parameters"] for tool in tool_schemas()}


@dataclass
class Toolbox(FinalActions):
    """The tools of one episode, bound to its problem and start commit."""

    memory: Memory
    git: GitThread
    index: MemoryIndex
    view: RunView
    ep: EpisodeInfo
    sandbox: anyio.CapacityLimiter
    references: References | None = None
    staged: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    """`code/...` files of the start commit a shell command removed."""

    def __post_init__(self) -> None:
        self.code = shell.Shell(self.memory, self.git, self.ep, self.sandbox, self.references)

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
        handler, parameters = getattr(self, f"tool_{name}", None), _parameters().get(name)
        if handler is None or parameters is None or (name in CODE_TOOLS and self.ep.kind not in CODE_KINDS):
            raise ToolError(f"there is no tool {name!r}")
        checked = check_arguments(name, parameters, args)
        notes = [*checked.notes, *foreign(name, checked.arguments)]
        try:
            result = await handler(**checked.arguments)
        except TypeError as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from None
        except ToolError as exc:
            raise ToolError(with_notes(str(exc), notes)) from None
        return result if isinstance(result, Final) else with_notes(result, notes)

    async def tool_list_items(self, kind: str | None = None, offset: int = 0) -> str:
        items = self.index.problems[self.ep.problem_id].items
        rows = [f"{path}  commit {commit[:12]}  cited by {self.index.cited[commit]}"
                for path, commit in items.items()
                if kind is None or path.startswith(f"{kind}s/") or (kind == "code" and path.startswith("code/"))]
        page = rows[offset: offset + 100]
        more = f"\n... {len(rows) - offset - 100} more: call again with offset={offset + 100}"
        return "\n".join(page) + (more if len(rows) > offset + 100 else "") if page else "no items"

    async def tool_read_file(self, path: str, offset: int = 0) -> str:
        rel = self._relative(path)
        data = await self.git(self.memory.read_file, f"{self.base}/{rel}", self.ep.start_commit)
        if data is None:
            staged = self.staged.get(rel)
            if staged is None:
                raise ToolError(f"no file {rel!r} in problems/{self.ep.problem_id}/ at your start commit")
            data = staged.encode()
        text = data.decode("utf-8", "replace")
        page = text[offset: offset + PAGE]
        if offset + PAGE < len(text):
            page += f"\n[... {len(text) - offset - PAGE} more characters: read_file offset={offset + PAGE}]"
        return render("tool_result.md.j2", fenced=True, source=f"{self.base}/{rel}", text=page)

    async def tool_search(self, query: str) -> str:
        needle = query.lower().strip()
        if not needle:
            raise ToolError("give a non-empty query")
        items = list(self.index.problems[self.ep.problem_id].items)
        paths = ["SUMMARY.md", *reversed(items[-SEARCH_ITEMS:])]  # newest first
        hits = await self.git(self._search, paths, needle)
        text = "\n".join(hits) or "no matches"
        if len(items) > SEARCH_ITEMS:
            text += (f"\n(searched the newest {SEARCH_ITEMS} of {len(items)} items; list_items with an "
                     "offset reaches the older ones)")
        return render("tool_result.md.j2", fenced=True, source="search results", text=text)

    def _search(self, paths: list[str], needle: str) -> list[str]:
        """Lines containing `needle`, up to SEARCH_HITS; one git-thread call, not one per file."""
        hits: list[str] = []
        for path in paths:
            data = self.memory.read_file(f"{self.base}/{path}", self.ep.start_commit)
            for n, line in enumerate((data or b"").decode("utf-8", "replace").splitlines(), 1):
                if needle in line.lower():
                    hits.append(f"{path}:{n}: {line.strip()[:200]}")
                    if len(hits) >= SEARCH_HITS:
                        return hits
        return hits

    async def tool_in_flight(self) -> str:
        if self.ep.isolated:
            return f"no other episode is visible: {ISOLATED}"
        others = [f"{w}: {a}" for w, a in self.view.announcements.items() if w != self.ep.worker]
        if not others:
            return "no other episode is in flight"
        return render("tool_result.md.j2", fenced=True, source="announcements", text="\n".join(others))

    async def tool_announce(self, intent: str) -> str:
        self.view.announce(self.ep.worker, f"{self.ep.problem_id}: {intent.strip()[:160]}")
        return "announced"

    async def tool_write_file(self, path: str, content: str, append: bool = False) -> str:
        rel = self._relative(path)
        if append:
            content = self.staged.get(rel, "") + content
        if rel.startswith("nominations/"):
            raise ToolError("nominations are made with the nominate action, not written")
        if self.ep.isolated and (rel == "SUMMARY.md" or rel.startswith("reviews/")):
            raise ToolError(f"{rel} is shared work, not part of this run: {ISOLATED}")
        try:
            check_path(rel, self.memory.limits)
        except PathRejected as exc:
            raise ToolError(exc.reason) from None
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError:
            raise ToolError("the content is not valid UTF-8 text (it holds a lone surrogate)") from None
        if "\x00" in content:
            raise ToolError("the content contains NUL characters; write text")
        if size > self.memory.limits.max_file_bytes:
            raise ToolError(f"the file is larger than {self.memory.limits.max_file_bytes} bytes")
        if rel not in self.staged and len(self.staged) >= self.memory.limits.max_files:
            raise ToolError(f"at most {self.memory.limits.max_files} files in one contribution")
        self.staged[rel] = content
        self.deleted.discard(rel)
        return f"staged {rel} ({len(content)} characters); {len(self.staged)} file(s) staged"

    async def tool_run_python(self, code: str) -> str:
        from gitswarm.sandbox import Limits, run

        files = {"main.py": code.encode()}
        for path, text in self.staged.items():
            if path.startswith("code/"):
                files[path.split("/", 2)[-1]] = text.encode()
        limits = Limits(wall_seconds=30, cpu_seconds=20, memory_bytes=1 << 30)
        result = await anyio.to_thread.run_sync(
            lambda: run([sys.executable, "main.py"], files=files, limits=limits, hide=self._hidden()),
            limiter=self.sandbox)
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        return f"{status}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"

    async def tool_shell(self, command: str, timeout: int = shell.DEFAULT_TIMEOUT) -> str:
        if not command.strip():
            raise ToolError("give a bash command")
        try:
            done = await self.code.run(command, timeout, self.staged, self.deleted, self._hidden())
        except SandboxError as exc:
            raise ToolError(f"the shell cannot run on this machine: {exc}") from None
        self.staged, self.deleted = done.staged, done.deleted
        return done.text

    def _hidden(self) -> tuple[Path, ...]:
        """What a program must not see: the run (grades, ledger) and every problem file with
        hidden parts — this run's set and the sets shipped with gitswarm."""
        folders = {self.memory.path.resolve(), Path(self.view.config.problems).resolve()}
        with contextlib.suppress(FileNotFoundError):
            folders.add(data_dir("problems").resolve())
        return tuple(sorted(folders))

    def _relative(self, path: str) -> str:
        rel = str(path).strip().removeprefix("./").removeprefix(f"{self.base}/")
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise ToolError(f"{path!r}: give a path inside your problem folder, e.g. notes/idea.md")
        return rel


