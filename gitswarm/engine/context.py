"""The text an episode's prompts carry: the state header at every step, and a memory overview
whose size does not depend on how large the memory grows (the rest is one tool call away)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitswarm.engine.config import SolveConfig
from gitswarm.engine.index import CANDIDATE_FOLDERS, VERDICTS, MemoryIndex
from gitswarm.engine.selection import is_verified, standings
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import Kind
from gitswarm.resources import render

CHARS_PER_TOKEN = 4
ROW_TOKENS = 30
HEADER_REVIEWED = 4
"""Candidates whose review state the header shows (the newest)."""
CRITICAL_SHOWN = 3
"""Episodes of critical reviews named per candidate."""
CODE_KINDS = (Kind.PROGRAM, Kind.REPRODUCE)
"""Problems whose workers have a shell (`tools.CODE_TOOLS`), and whose first prompt says how
to use it."""


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
    """The run's state as every step's header shows it. Each fact has one writer method, which
    the run's owner (scheduler, coordinator, merger) calls; episodes only announce."""

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
    set_aside: set[str] = field(default_factory=set)
    """Problems no episode is started on any more: their last episodes all abstained or failed."""
    announcements: dict[str, str] = field(default_factory=dict)
    """Worker -> "problem: intent" of the episodes in flight."""

    @property
    def max_episodes(self) -> int:
        """The episode cap."""
        return self.config.max_episodes

    def counted(self, charged: int, episodes: int) -> None:
        """The episodes so far: those charged to the budget, and those of any outcome."""
        self.charged, self.episodes = charged, episodes

    def spent(self, tokens: int, cost: float, cost_known: bool) -> None:
        """What the run spent so far (every process's, in a run on a remote)."""
        self.tokens, self.cost, self.cost_known = tokens, cost, cost_known

    def settle(self, settled: set[str]) -> None:
        """The problems settled now, by the selection rule over the index."""
        self.settled = settled

    def put_aside(self, problems: set[str]) -> None:
        """The problems set aside now (the no-progress rule)."""
        self.set_aside = problems

    def announce(self, worker: str, intent: str | None) -> None:
        """What `worker`'s episode works on ("problem: intent"); None when the episode ended."""
        if intent is None:
            self.announcements.pop(worker, None)
        else:
            self.announcements[worker] = intent


@dataclass(frozen=True)
class EpisodeInfo:
    """Who runs an episode, on what, from which memory state."""

    episode: str
    worker: str
    problem_id: str
    kind: str
    title: str
    start_commit: str
    executable: str | None = None
    """The documented name of the reference executable on the shell's PATH (reproduce
    problems); None when this process has no reference, and the prompt does not promise one."""
    isolated: bool = False
    """The episode sees only its problem's statement (`SolveConfig.isolation` independent): it
    starts from the run's first commit, with an empty index, and no other episode's news."""


def header(view: RunView, index: MemoryIndex, ep: EpisodeInfo, step: int, staged: list[str]) -> str:
    cfg = view.config
    usd = (f"USD {view.cost:.4f} spent" + ("" if view.cost_known else " (some prices unknown)")
           + (f" of cap {cfg.max_usd:.2f}" if cfg.max_usd is not None else ", no USD cap"))
    toks = f"{view.tokens} tokens spent" + (f" of cap {cfg.max_total_tokens}" if cfg.max_total_tokens else "")
    problem = index.problems[ep.problem_id]
    counts = ", ".join(f"{n} {k}" for k, n in sorted(problem.kinds.items())) or "no contributions yet"
    votes = ", ".join(f"{_path_of(index, ep.problem_id, c)} ({c[:12]}) x{n}"
                      for c, n in problem.nominations.most_common(5))
    candidates = list(index.candidates(ep.problem_id).items())[::-1]
    reviewed = [{"path": path, **review_state(index, ep.problem_id, commit)}
                for path, commit in candidates[:HEADER_REVIEWED]]
    return render("state_header.md.j2", problem={"id": ep.problem_id, "kind": ep.kind},
                  settled=ep.problem_id in view.settled, episode=ep.episode, worker=ep.worker,
                  step=step, max_steps=cfg.max_steps, budget_left=max(0, cfg.budget - view.charged),
                  budget=cfg.budget, usd_left=usd, tokens_left=toks, start_commit=ep.start_commit,
                  counts=counts, nominations=votes, settled_problems=", ".join(sorted(view.settled)),
                  staged=", ".join(staged), episodes=view.episodes, max_episodes=view.max_episodes,
                  set_aside=", ".join(sorted(view.set_aside)), reviewed=reviewed,
                  more_reviewed=max(0, len(candidates) - HEADER_REVIEWED),
                  next_action=next_action(index, ep.problem_id, ep.worker, candidates, _busy(view, ep),
                                          cfg.verify),
                  verify=cfg.verify, verified=verified(index, ep.problem_id, candidates, cfg.verify),
                  settle_nominations=cfg.settle_nominations)


def _busy(view: RunView, ep: EpisodeInfo) -> str:
    """What the other episodes in flight on this problem announced, as one text."""
    return " ".join(a for w, a in view.announcements.items()
                    if w != ep.worker and a.startswith(f"{ep.problem_id}: "))


def review_state(index: MemoryIndex, problem: str, commit: str) -> dict:
    """A candidate's counted reviews per verdict, and the episodes of its critical ones."""
    reviews = index.reviews_of(problem, commit)
    state: dict = {v: sum(r.verdict == v for r in reviews) for v in VERDICTS}
    state["critical_by"] = [r.episode for r in reviews if r.verdict == "critical"][:CRITICAL_SHOWN]
    return state


def next_action(index: MemoryIndex, problem: str, worker: str, candidates: list[tuple[str, str]],
                busy: str = "", verify: int = 0) -> dict | None:
    """The most useful next step on the candidates (newest first): nominate a verified one
    when `worker` has nominated none on this problem (the most nominated: that settles the
    problem soonest, and reviewing other candidates can wait); else review one no other
    worker has reviewed (not `worker`'s own, nor one named in `busy`, the other episodes'
    announcements); else revise one with a critical review that no attempt answers yet (none
    cites the candidate or any of its critical reviews, and no episode in flight names it);
    else review one still short of the `verify` passes that selection needs, that `worker`
    has not reviewed; None when none is waiting."""
    votes = index.problems[problem]
    good = verified(index, problem, candidates, verify)
    if good and worker not in votes.nominators:
        path, commit = max((c for c in candidates if c[0] in good), key=lambda c: votes.nominations[c[1]])
        return {"action": "nominate", "path": path, "commit": commit, "nominations": votes.nominations[commit]}
    mine = {path for path, commit in candidates if index.authors.get(commit) == worker or path in busy}
    for path, commit in candidates:
        if path not in mine and not index.reviews_of(problem, commit):
            return {"action": "review", "path": path, "commit": commit}
    for path, commit in candidates:
        critical = [r for r in index.reviews_of(problem, commit) if r.verdict == "critical"]
        answered = commit in index.answered or any(r.commit in index.answered for r in critical)
        if critical and not answered and path not in busy:
            return {"action": "revise", "path": path, "commit": commit,
                    "review_episode": critical[0].episode, "review_commit": critical[0].commit}
    for path, commit in candidates:
        reviews = index.reviews_of(problem, commit)
        passes = sum(r.verdict == "pass" for r in reviews)
        if (path not in mine and passes < verify and all(r.verdict != "critical" for r in reviews)
                and all(r.worker != worker for r in reviews)):
            return {"action": "verify", "path": path, "commit": commit, "passes": passes}
    return None


def verified(index: MemoryIndex, problem: str, candidates: list[tuple[str, str]], verify: int) -> list[str]:
    """The paths of the candidates selection counts as verified (none are listed for
    `verify` = 0, where selection asks for no review)."""
    if verify == 0:
        return []
    good = {s.commit for s in standings(index, problem) if is_verified(s.passes, s.critical, verify)}
    return [path for path, commit in candidates if commit in good]


def _path_of(index: MemoryIndex, problem: str, commit: str) -> str:
    files = index.files_of.get(commit, (problem, []))[1]
    return next((f for f in files if f.startswith(CANDIDATE_FOLDERS)), commit[:12])


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
             "title": _first_line(memory, f"{base}/{path}", ep.start_commit),
             "review": review_state(index, ep.problem_id, commit) if path.startswith(CANDIDATE_FOLDERS) else None}
            for path, commit in chosen]
    others = [] if ep.isolated else [f"{w} on {a}" for w, a in view.announcements.items() if w != ep.worker]
    return render("episode_start.md.j2", header=head, problem={"id": ep.problem_id, "title": ep.title},
                  statement=statement.strip(), summary=summary.strip(), items=rows,
                  total=len(index.problems[ep.problem_id].items), in_flight=others[:10],
                  code_work=_code_work(ep), isolated=ep.isolated)


def _code_work(ep: EpisodeInfo) -> str:
    """How to work with the shell, for the problems that have one ("" for the others)."""
    if ep.kind not in CODE_KINDS:
        return ""
    return render("code_work.md.j2", kind=ep.kind, executable=ep.executable)


def _first_line(memory: Memory, path: str, at: str) -> str:
    """The first line of text of a file, past its front matter (a review's, say)."""
    text = (memory.read_file(path, at) or b"").decode("utf-8", "replace")
    if text.startswith("---\n") and "\n---\n" in text[3:]:
        text = text[3:].split("\n---\n", 1)[1]
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line and not line.startswith("---"):
            return line.replace("|", "/")[:80]
    return ""
