"""The text an episode's prompts carry: the state header at every step, and a memory overview
whose size does not depend on how large the memory grows (the rest is one tool call away)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import CANDIDATE_FOLDERS, VERDICTS, candidate_path
from gitswarm.domain.rule import Rule
from gitswarm.engine import tasks
from gitswarm.engine.config import SolveConfig
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
    verified: set[str] = field(default_factory=set)
    """Problems not settled that have a verified candidate (nominations choose among several)."""
    episodes: int = 0
    """Episodes of any outcome so far, in flight included (the episode cap counts them)."""
    set_aside: set[str] = field(default_factory=set)
    """Problems no episode is started on any more: their last episodes all abstained or failed."""
    announcements: dict[str, str] = field(default_factory=dict)
    """Worker -> "problem: intent" of the episodes in flight."""
    running: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    """Worker -> (episode, problem, step) of every episode in flight in this process, announced
    or not (step 0: not yet at its first model call)."""

    @property
    def max_episodes(self) -> int:
        """The episode cap."""
        cap = self.config.max_episodes
        assert cap is not None  # SolveConfig sets it from the budget when none is given (`_episode_cap`)
        return cap

    def counted(self, charged: int, episodes: int) -> None:
        """The episodes so far: those charged to the budget, and those of any outcome."""
        self.charged, self.episodes = charged, episodes

    def spent(self, tokens: int, cost: float, cost_known: bool) -> None:
        """What the run spent so far (every process's, in a run on a remote)."""
        self.tokens, self.cost, self.cost_known = tokens, cost, cost_known

    def settle(self, settled: set[str], verified: set[str] | None = None) -> None:
        """The problems settled now, and those with a verified candidate not settled yet, by the
        selection rule over the index (`selection.standing_of`)."""
        self.settled = settled
        self.verified = (verified or set()) - settled

    def put_aside(self, problems: set[str]) -> None:
        """The problems set aside now (the no-progress rule)."""
        self.set_aside = problems

    def announce(self, worker: str, intent: str | None) -> None:
        """What `worker`'s episode works on ("problem: intent"); None when the episode ended."""
        if intent is None:
            self.announcements.pop(worker, None)
        else:
            self.announcements[worker] = intent

    def working(self, worker: str, episode: str, problem: str, step: int) -> None:
        """`worker`'s episode is in flight on `problem`, at `step` (0: not yet at its first call)."""
        self.running[worker] = (episode, problem, step)

    def finished(self, worker: str) -> None:
        """`worker`'s episode ended: it is no longer in flight, and its announcement is gone."""
        self.running.pop(worker, None)
        self.announcements.pop(worker, None)

    def busy_on(self, problem: str, worker: str) -> str:
        """What the other episodes in flight on `problem` announced, as one text (a candidate
        named in it is being worked on)."""
        return " ".join(a for w, a in self.announcements.items() if w != worker and a.startswith(f"{problem}: "))

    def others_on(self, problem: str, worker: str) -> list[dict]:
        """The other episodes in flight on `problem`: worker, episode, step, announcement."""
        return [{"worker": w, "episode": e, "step": step,
                 "intent": self.announcements.get(w, "").removeprefix(f"{problem}: ")}
                for w, (e, p, step) in sorted(self.running.items()) if p == problem and w != worker]


@dataclass(frozen=True)
class Assignment:
    """The candidate a review episode is assigned to check (`engine.reviewing`)."""

    path: str
    """`attempts/<file>` or `code/<slug>`."""
    commit: str
    blind: bool = False
    """It sees the problem's own files and this candidate alone, read at its commit."""


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
    review: Assignment | None = None
    """A review episode's candidate: it reviews that one or abstains, on the reviewer model."""
    image: str | None = None
    """The container image the episode's programs run in (`Problem.image`), or None: the host's root."""
    reference_in_image: bool = False
    """The reference is the image's own `./executable` (`Problem.reference_in_image`)."""

    @property
    def blind(self) -> bool:
        return self.review is not None and self.review.blind

    @property
    def alone(self) -> bool:
        """It sees nothing of the memory's work in progress: no index, no overview, no one in
        flight (an isolated episode, a blind review); its view of main stays `start_commit`."""
        return self.isolated or self.blind


def system_prompt(cfg: SolveConfig, kind: str, review: Assignment | None = None) -> str:
    """The system prompt of an episode on a problem of `kind`: the worker's (or, for a `review`
    episode, the reviewer's) standards for its kind family and the run's rules (what verifies,
    selects and settles). One per family and role in a run, so that requests share a cached prefix."""
    rule = Rule.of(cfg)
    values = {"max_steps": cfg.steps(kind), "code": kind in CODE_KINDS, "verify": rule.verify, "in_row": rule.in_row,
              "nominations": rule.nominations, "settle_nominations": rule.settle_nominations}
    if review is not None:
        return render("review_system.md.j2", blind=review.blind, **values)
    return render("worker_system.md.j2", assigned=cfg.assigns_reviews, reviewer=cfg.reviewer_model is not None,
                  blind=cfg.blind, **values)


def spending(view: RunView) -> dict[str, str]:
    """What the run spent, as the state block says it: `usd_left` and `tokens_left`."""
    cfg = view.config
    usd = ("no USD spent yet" if not view.tokens else
           "USD unknown (no price for this model)" if not view.cost_known and not view.cost else
           f"USD {view.cost:.4f} spent" + ("" if view.cost_known else " (some prices unknown)"))
    usd += f" of cap {cfg.max_usd:.2f}" if cfg.max_usd is not None else ", no USD cap"
    toks = f"{view.tokens} tokens spent" + (f" of cap {cfg.max_total_tokens}" if cfg.max_total_tokens else "")
    return {"usd_left": usd, "tokens_left": toks}


def header(view: RunView, index: MemoryIndex, ep: EpisodeInfo, step: int, staged: list[str],
           new_items: int = 0) -> str:
    """The state block of every step, from the step's view of main (`index`, pinned at its
    `seen_tip`); `new_items` counts the items landed since the episode started."""
    cfg = view.config
    problem = index.problems[ep.problem_id]
    counts = ", ".join(f"{n} {k}" for k, n in sorted(problem.kinds.items())) or "no contributions yet"
    votes = ", ".join(f"{_path_of(index, ep.problem_id, c)} ({c[:12]}) x{n}"
                      for c, n in problem.nominations.most_common(5))
    candidates = list(index.candidates(ep.problem_id).items())[::-1]
    reviewed = [{"path": path, "text": reviews_text(index, ep.problem_id, commit)}
                for path, commit in candidates[:HEADER_REVIEWED]]
    rule = Rule.of(cfg)
    settled = ep.problem_id in view.settled
    busy = view.others_on(ep.problem_id, ep.worker)
    task = _task(view, index, ep, rule, settled, len(busy))
    open_ = len([p for p in view.problems if p not in view.settled and p not in view.verified])
    return render("state_header.md.j2", problem={"id": ep.problem_id, "kind": ep.kind},
                  settled=settled, episode=ep.episode, worker=ep.worker,
                  step=step, max_steps=cfg.steps(ep.kind), budget_left=max(0, cfg.budget - view.charged),
                  budget=cfg.budget, **spending(view), start_commit=ep.start_commit,
                  at=index.seen_tip or ep.start_commit, new_items=new_items,
                  counts=counts, nominations=votes, staged=", ".join(staged), episodes=view.episodes,
                  max_episodes=view.max_episodes, set_aside=", ".join(sorted(view.set_aside)), reviewed=reviewed,
                  more_reviewed=max(0, len(candidates) - HEADER_REVIEWED), task=task,
                  needs="" if ep.isolated else tasks.needs(index, ep.problem_id, rule, settled),
                  run={"problems": len(view.problems), "settled": len(view.settled & set(view.problems)),
                       "verified": len(view.verified & set(view.problems)), "open": open_},
                  verify=cfg.verify, settle_nominations=cfg.settle_nominations, isolated=ep.isolated,
                  assigned=ep.review is not None)


def _task(view: RunView, index: MemoryIndex, ep: EpisodeInfo, rule: Rule, settled: bool,
          in_flight: int) -> tasks.Task | None:
    """The step the state block advises: an assigned review's one task; none for an isolated
    episode or a settled problem; else `tasks.next_task`, without reviews where the run assigns
    them, and `ASSIGNED` where the problem's next step is such a review (not this episode's)."""
    if ep.review is not None:
        return tasks.Task(tasks.REVIEW, 3, ep.review.path, ep.review.commit)
    if ep.isolated or settled:
        return None
    busy, assigned = view.busy_on(ep.problem_id, ep.worker), view.config.assigns_reviews
    task = tasks.next_task(index, ep.problem_id, ep.worker, rule, busy, in_flight, reviews=not assigned)
    if assigned and task.action == tasks.ATTEMPT and tasks.next_task(
            index, ep.problem_id, ep.worker, rule, busy, in_flight).action in (tasks.REVIEW, tasks.VERIFY):
        return tasks.Task(tasks.ASSIGNED, 0)
    return task


def review_state(index: MemoryIndex, problem: str, commit: str) -> dict:
    """A candidate's counted reviews per verdict, and the episodes of its critical ones."""
    reviews = index.reviews_of(problem, commit)
    state: dict = {v: sum(r.verdict == v for r in reviews) for v in VERDICTS}
    state["critical_by"] = [r.episode for r in reviews if r.verdict == "critical"][:CRITICAL_SHOWN]
    return state


def reviews_text(index: MemoryIndex, problem: str, commit: str) -> str:
    """A candidate's review state as one line ("1 pass, 1 critical (e00019)", "unreviewed")."""
    return render("review_line.md.j2", r=review_state(index, problem, commit)).strip()


def _path_of(index: MemoryIndex, problem: str, commit: str) -> str:
    files = index.files_of.get(commit, (problem, []))[1]
    return next((f for f in files if f.startswith(CANDIDATE_FOLDERS)), commit[:12])


def overview(memory: Memory, view: RunView, index: MemoryIndex, ep: EpisodeInfo, head: str) -> str:
    """The first prompt of an episode: statement, summary, and a fixed number of items (the
    most cited, then the newest; a codebase as one row), so its size does not grow with the
    memory, then the episodes in flight on the problem and the state; all of it from the step's
    view of main, `index` at its `seen_tip` (git thread)."""
    cfg = view.config
    base, at = f"problems/{ep.problem_id}", index.seen_tip or ep.start_commit
    statement = (memory.read_file(f"{base}/statement.md", at) or b"").decode()
    summary = (memory.read_file(f"{base}/SUMMARY.md", at) or b"").decode()
    summary = clip(summary, cfg.context_tokens // 3, "read SUMMARY.md for the rest")
    room = max(4, (cfg.context_tokens - tokens(statement) // 2 - tokens(summary)) // ROW_TOKENS)
    codebases = index.candidates(ep.problem_id)
    chosen = dict.fromkeys(candidate_path(p) for p, _ in index.shown(ep.problem_id, cfg.overview_cited,
                                                                    cfg.overview_newest))
    items = index.problems[ep.problem_id].items
    rows = []
    for path in list(chosen)[:room]:
        commit = codebases.get(path) or items[path]
        first = next(p for p in items if candidate_path(p) == path) if path.startswith("code/") else path
        rows.append({"path": path + ("/" if path.startswith("code/") else ""), "commit": commit,
                     "cited": index.cited[commit], "author": index.authors.get(commit) or "?",
                     "yours": index.authors.get(commit) == ep.worker,
                     "title": _first_line(memory, f"{base}/{first}", at),
                     "review": reviews_text(index, ep.problem_id, commit)
                     if path.startswith(CANDIDATE_FOLDERS) else ""})
    total = len({candidate_path(p) for p in items})
    others = [] if ep.isolated else view.others_on(ep.problem_id, ep.worker)
    return render("episode_start.md.j2", header=head, problem={"id": ep.problem_id, "title": ep.title},
                  statement=statement.strip(), summary=summary.strip(), items=rows,
                  total=total, in_flight=others[:10], code_work="" if ep.review else _code_work(ep),
                  isolated=ep.isolated, assigned=ep.review is not None,
                  executable=ep.executable if ep.kind in CODE_KINDS else None)


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
        line = re.sub(r"^#+\s+", "", line.strip())  # a Markdown heading's marks, not a `#!` line's
        if line and not line.startswith("---"):
            return line.replace("|", "/")[:80]
    return ""
