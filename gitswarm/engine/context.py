"""The text an episode's prompts carry: the state header at every step, and a memory overview
whose size does not depend on how large the memory grows (the rest is one tool call away)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitswarm.engine.config import SolveConfig
from gitswarm.engine.index import MemoryIndex
from gitswarm.memory.repo import Memory
from gitswarm.resources import render

CHARS_PER_TOKEN = 4
ROW_TOKENS = 30


def tokens(text: str) -> int:
    """A cheap, provider-independent estimate; enough to keep prompts inside a budget."""
    return len(text) // CHARS_PER_TOKEN + 1


def clip(text: str, budget_tokens: int, hint: str) -> str:
    limit = budget_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters: {hint}]"


@dataclass
class RunView:
    """The run's state as every step's header shows it (kept current by the scheduler)."""

    config: SolveConfig
    problems: list[str] = field(default_factory=list)
    """The problems this run works on."""
    charged: int = 0
    tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    settled: set[str] = field(default_factory=set)
    episodes: int = 0
    """Episodes of any outcome so far, in flight included (the episode cap counts them)."""
    max_episodes: int = 0
    """The episode cap."""
    set_aside: set[str] = field(default_factory=set)
    """Problems no episode is started on any more: their last episodes all abstained or failed."""
    announcements: dict[str, str] = field(default_factory=dict)
    """Worker -> "problem: intent" of the episodes in flight."""


@dataclass(frozen=True)
class EpisodeInfo:
    """Who runs an episode, on what, from which memory state."""

    episode: str
    worker: str
    problem_id: str
    kind: str
    title: str
    start_commit: str


def header(view: RunView, index: MemoryIndex, ep: EpisodeInfo, step: int, staged: list[str]) -> str:
    cfg = view.config
    usd = (f"USD {view.cost:.4f} spent" + ("" if view.cost_known else " (some prices unknown)")
           + (f" of cap {cfg.max_usd:.2f}" if cfg.max_usd is not None else ", no USD cap"))
    toks = f"{view.tokens} tokens spent" + (f" of cap {cfg.max_total_tokens}" if cfg.max_total_tokens else "")
    problem = index.problems[ep.problem_id]
    counts = ", ".join(f"{n} {k}" for k, n in sorted(problem.kinds.items())) or "no contributions yet"
    votes = ", ".join(f"{_path_of(index, ep.problem_id, c)} ({c[:12]}) x{n}"
                      for c, n in problem.nominations.most_common(5))
    return render("state_header.md.j2", problem={"id": ep.problem_id, "kind": ep.kind},
                  settled=ep.problem_id in view.settled, episode=ep.episode, worker=ep.worker,
                  step=step, max_steps=cfg.max_steps, budget_left=max(0, cfg.budget - view.charged),
                  budget=cfg.budget, usd_left=usd, tokens_left=toks, start_commit=ep.start_commit,
                  counts=counts, nominations=votes, settled_problems=", ".join(sorted(view.settled)),
                  staged=", ".join(staged), episodes=view.episodes, max_episodes=view.max_episodes,
                  set_aside=", ".join(sorted(view.set_aside)))


def _path_of(index: MemoryIndex, problem: str, commit: str) -> str:
    files = index.files_of.get(commit, (problem, []))[1]
    return next((f for f in files if f.startswith(("attempts/", "code/"))), commit[:12])


def overview(memory: Memory, view: RunView, index: MemoryIndex, ep: EpisodeInfo, head: str) -> str:
    """The first prompt of an episode: header, statement, summary, and a fixed number of items
    (the most cited, then the newest), so its size does not grow with the memory (git thread)."""
    cfg = view.config
    base = f"problems/{ep.problem_id}"
    statement = (memory.read_file(f"{base}/statement.md", ep.start_commit) or b"").decode()
    summary = (memory.read_file(f"{base}/SUMMARY.md", ep.start_commit) or b"").decode()
    summary = clip(summary, cfg.context_tokens // 3, "read SUMMARY.md for the rest")
    room = max(4, (cfg.context_tokens - tokens(statement) // 2 - tokens(summary)) // ROW_TOKENS)
    chosen = index.shown(ep.problem_id, cfg.overview_cited, cfg.overview_newest)[:room]
    rows = [{"path": path, "commit": commit, "cited": index.cited[commit],
             "title": _first_line(memory, f"{base}/{path}", ep.start_commit)}
            for path, commit in chosen]
    others = [f"{w} on {a}" for w, a in view.announcements.items() if w != ep.worker]
    return render("episode_start.md.j2", header=head, problem={"id": ep.problem_id, "title": ep.title},
                  statement=statement.strip(), summary=summary.strip(), items=rows,
                  total=len(index.problems[ep.problem_id].items), in_flight=others[:10])


def _first_line(memory: Memory, path: str, at: str) -> str:
    data = memory.read_file(path, at) or b""
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip().lstrip("#").strip()
        if line and not line.startswith("---"):
            return line.replace("|", "/")[:80]
    return ""
