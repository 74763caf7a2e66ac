"""The worker's tools: read the memory as of the episode's start, stage files, run code, and
end the episode with one final action. Every refusal is a `ToolError` the agent reads; a
call's arguments are checked against the tool's schema first (`toolargs`).
Program and reproduce problems also get `shell` (`CODE_TOOLS`): a command in the episode's
code tree (`workspace`), whose changes become staged files and deletions."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import anyio
import yaml

from gitswarm.engine import shell
from gitswarm.engine.context import CODE_KINDS, EpisodeInfo, RunView
from gitswarm.engine.gitio import GitThread
from gitswarm.engine.index import VERDICTS, MemoryIndex
from gitswarm.engine.references import References
from gitswarm.engine.toolargs import ToolError, check_arguments, with_notes
from gitswarm.memory.errors import PathRejected
from gitswarm.memory.model import Contribution
from gitswarm.memory.paths import check_path
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import Kind
from gitswarm.resources import data_dir, render
from gitswarm.sandbox import SandboxError

PAGE = 8000
SEARCH_ITEMS = 2000
"""Items one search reads, newest first: a bound on the git thread's time for one call."""
SEARCH_HITS = 40
KINDS = ("note", "lemma", "attempt", "review", "code", "summary")
ISOLATED = ("in this run every episode works independently (isolation independent): write and contribute "
            "your own attempt, or abstain")
CODE_TOOLS = ("shell",)
"""Tools offered only for problems of `CODE_KINDS`."""
KIND_ONLY = {"reviews": "review", "verdict": "review"}
"""`contribute`'s arguments that belong to one kind: dropped, with a note, from the others."""

__all__ = ["CODE_TOOLS", "KINDS", "Final", "ToolError", "Toolbox", "tool_schemas"]


@dataclass(frozen=True)
class Final:
    """How an episode ends: `contribute` or `nominate` (with the contribution to commit),
    `abstain`, or `failed` (the step limit, the wall clock, replies without tool calls)."""

    action: str
    contribution: Contribution | None = None
    reason: str = ""


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
class Toolbox:
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

    @property
    def base(self) -> str:
        return f"problems/{self.ep.problem_id}"

    async def call(self, name: str, args: object) -> str | Final:
        """Run one call of the model, its arguments (any JSON value) checked against the tool's
        schema first; a text result (or a refusal) ends with notes on what was dropped or
        read differently."""
        handler, parameters = getattr(self, f"tool_{name}", None), _parameters().get(name)
        if handler is None or parameters is None or (name in CODE_TOOLS and self.ep.kind not in CODE_KINDS):
            raise ToolError(f"there is no tool {name!r}")
        checked = check_arguments(name, parameters, args)
        notes = [*checked.notes, *_foreign(name, checked.arguments)]
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
        self.view.announcements[self.ep.worker] = f"{self.ep.problem_id}: {intent.strip()[:160]}"
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

    async def tool_contribute(self, kind: str, title: str, summary: str, informed_by: list[str] | None = None,
                              self_assessment: str = "", reviews: str | None = None,
                              verdict: str | None = None) -> Final:
        if kind not in KINDS:
            raise ToolError(f"kind must be one of {', '.join(KINDS)}")
        if self.ep.isolated and kind in ("review", "summary"):
            raise ToolError(f"kind {kind} is not part of this run: {ISOLATED}")
        if not self.staged and not self.deleted:
            raise ToolError("nothing is staged: write_file first, then contribute")
        if kind == "code" and self.ep.kind == Kind.REPRODUCE and (  # a candidate is code/<slug>/ with compile.sh
                problem := await self.code.codebase_problem(self.staged, self.deleted)):
            raise ToolError(problem)
        reviewed = self._reviewed(kind, reviews, verdict)
        cited = [*(reviewed[:1] if reviewed else []), *(self._commit(ref) for ref in (informed_by or []))]
        files, trailers = dict(self.staged), {}
        if reviewed:
            files.update(self._stamped(*reviewed, str(verdict)))
            trailers = {"Reviews": reviewed[0], "Verdict": str(verdict)}
        return Final("contribute", replace(self._contribution(kind, title, summary, files, cited,
                                                              self_assessment, trailers),
                                           deleted=tuple(sorted(self.deleted))))

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
        found = self.index.resolve(self.ep.problem_id, reviews)
        if found is None:
            raise ToolError(f"reviews: no attempt or program {reviews!r} of this problem in the memory; "
                            "give its path (attempts/... or code/...) or commit id")
        return found

    async def tool_nominate(self, candidate: str, rationale: str) -> Final:
        if self.ep.isolated:
            raise ToolError(f"nominating is not part of this run: {ISOLATED}")
        found = self.index.resolve(self.ep.problem_id, candidate)
        if found is None:
            raise ToolError(f"no attempt or program {candidate!r} of this problem in the memory; "
                            "give its path (attempts/... or code/...) or commit id")
        commit, path = found
        text = f"---\ncandidate: {commit}\npath: {path}\n---\n\n{rationale.strip()}\n"
        files = {f"nominations/{self.ep.episode}.md": text}
        return Final("nominate", self._contribution("nomination", f"nominate {path}", rationale, files,
                                                    [commit], "", {"Candidate": commit}))

    async def tool_abstain(self, reason: str) -> Final:
        return Final("abstain", reason=reason.strip()[:500])

    def _contribution(self, kind, title, summary, files, cited, assessment, trailers) -> Contribution:
        return Contribution(
            problem=self.ep.problem_id, episode=self.ep.episode, worker=self.ep.worker, kind=kind,
            title=title.strip()[:100] or kind, files=dict(files), parent=self.ep.start_commit,
            op=f"{self.ep.episode}-final", summary=summary.strip()[:2000],
            informed_by=tuple(dict.fromkeys(cited)), self_assessment=assessment.strip()[:200],
            trailers=trailers)

    def _relative(self, path: str) -> str:
        rel = str(path).strip().removeprefix("./").removeprefix(f"{self.base}/")
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise ToolError(f"{path!r}: give a path inside your problem folder, e.g. notes/idea.md")
        return rel

    def _commit(self, reference: str) -> str:
        """A cited commit, named by an item's path or by (a prefix of) its id."""
        ref = str(reference).strip()
        items = self.index.problems[self.ep.problem_id].items
        rel = ref.removeprefix(f"{self.base}/")
        if rel in items:
            return items[rel]
        if len(ref) >= 7:
            matches = [c for c in self.index.files_of if c.startswith(ref.lower())]
            if len(matches) == 1:
                return matches[0]
        raise ToolError(f"informed_by: {reference!r} is not a commit in the memory; use the commit "
                        "ids or paths shown by list_items")


def _foreign(name: str, arguments: dict) -> list[str]:
    """Drop `contribute`'s arguments that do not belong to its kind (small models fill every
    field); the notes say so."""
    kind = arguments.get("kind")
    dropped = [key for key, only in KIND_ONLY.items() if name == "contribute" and key in arguments and kind != only]
    for key in dropped:
        del arguments[key]
    return [f"ignored `{key}` (only for kind {KIND_ONLY[key]})" for key in dropped]
