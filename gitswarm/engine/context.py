"""The text an episode's prompts carry: the state header at every step, and a memory overview
whose size does not depend on how large the memory grows (the rest is one tool call away)."""

from __future__ import annotations

import re
from itertools import islice

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import CANDIDATE_FOLDERS, VERDICTS, candidate_path
from gitswarm.domain.rule import Rule
from gitswarm.engine import tasks
from gitswarm.engine.plan import CODE_KINDS, EpisodePlan, Role
from gitswarm.engine.runview import RunView
from gitswarm.engine.terms import Terms
from gitswarm.memory.repo import Memory
from gitswarm.resources import render

CHARS_PER_TOKEN = 4
ROW_TOKENS = 30
HEADER_REVIEWED = 4
"""Candidates whose review state the header shows (the newest)."""
OWN_FOLDERS = ("docs/", "starter/")
"""The folders of a problem's own files besides its statement: its documentation and starter
files, which every episode may read (a blind review too)."""
CRITICAL_SHOWN = 3
"""Episodes of critical reviews named per candidate."""


def tokens(text: str) -> int:
    """A cheap, provider-independent estimate; enough to keep prompts inside a budget."""
    return len(text) // CHARS_PER_TOKEN + 1


def clip(text: str, budget_tokens: int, hint: str) -> str:
    limit = budget_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters: {hint}]"


def system_prompt(ep: EpisodePlan) -> str:
    """The system prompt of episode `ep`: its role's (`Powers.system`: a swarm worker's, a
    reviewer's, an isolated attempt's), with the standards of its problem's kind family and the
    run's rules (what verifies, selects and settles). One per family and role in a run, so that
    requests share a cached prefix."""
    terms = ep.terms
    rule = terms.rule
    return render(ep.powers.system, max_steps=terms.max_steps, code=ep.code, verify=rule.verify, in_row=rule.in_row,
                  nominations=rule.nominations, settle_nominations=rule.settle_nominations,
                  assigned=ep.role is Role.FREE, reviewer=terms.own_reviewer, blind=_blind(ep))


def _blind(ep: EpisodePlan) -> bool:
    """A reviewer's: it reviews blind; a free worker's: the run's reviews are blind."""
    return ep.role is Role.BLIND or (ep.role is Role.FREE and ep.terms.blind_reviews)


def spending(view: RunView, cfg: Terms) -> dict[str, str]:
    """What the run spent, as the state block says it (`cfg`: the caps): `usd_left` and `tokens_left`."""
    usd = ("no USD spent yet" if not view.tokens else
           "USD unknown (no price for this model)" if not view.cost_known and not view.cost else
           f"USD {view.cost:.4f} spent" + ("" if view.cost_known else " (some prices unknown)"))
    usd += f" of cap {cfg.max_usd:.2f}" if cfg.max_usd is not None else ", no USD cap"
    toks = f"{view.tokens} tokens spent" + (f" of cap {cfg.max_total_tokens}" if cfg.max_total_tokens else "")
    return {"usd_left": usd, "tokens_left": toks}


def header(view: RunView, index: MemoryIndex, ep: EpisodePlan, step: int, staged: list[str],
           new_items: int = 0) -> str:
    """The state block of every step, from the step's view of main (`index`, pinned at its
    `seen_tip`); `new_items` counts the items landed since the episode started."""
    cfg = ep.terms
    counts, votes, reviewed, more_reviewed = _memory_lines(index, ep.problem_id)
    rule = cfg.rule
    settled = ep.problem_id in view.settled
    busy = view.others_on(ep.problem_id, ep.worker)
    open_ = len([p for p in view.problems if p not in view.settled and p not in view.verified])
    share = -(-cfg.workers // max(1, len([p for p in view.problems if p not in view.settled])))
    task = _task(view, index, ep, rule, settled, len(busy), share)
    return render("state_header.md.j2", problem={"id": ep.problem_id, "kind": ep.kind},
                  settled=settled, episode=ep.episode, worker=ep.worker,
                  step=step, max_steps=cfg.max_steps, budget_left=max(0, cfg.budget - view.charged),
                  budget=cfg.budget, **spending(view, cfg), start_commit=ep.start_commit,
                  at=index.seen_tip or ep.start_commit, new_items=new_items,
                  counts=counts, nominations=votes, staged=", ".join(staged), episodes=view.episodes,
                  max_episodes=cfg.max_episodes, set_aside=", ".join(sorted(view.set_aside)), reviewed=reviewed,
                  more_reviewed=more_reviewed, task=task,
                  needs=tasks.needs(index, ep.problem_id, rule, settled, busy) if ep.powers.sees_others else "",
                  run={"problems": len(view.problems), "settled": len(view.settled & set(view.problems)),
                       "verified": len(view.verified & set(view.problems)), "open": open_},
                  verify=rule.verify, settle_nominations=rule.settle_nominations, isolated=not ep.powers.sees_others,
                  assigned=ep.reviewing, deliverable=ep.deliverable, finals=ep.finals, second=tasks.SECOND)


def _memory_lines(index: MemoryIndex, problem: str) -> tuple[str, str, list[dict[str, str]], int]:
    """What the state block says of the problem's items: its contributions by kind, the most
    nominated candidates, the newest candidates' review lines and how many older ones there
    are. Read from the items alone, and kept with them (`ProblemIndex.derived`): every step of
    every episode on the problem shows them, and they change only when the items do."""
    own = index.problems[problem]
    kept = own.derived
    found: tuple[str, str, list[dict[str, str]], int] | None = kept.get("header")
    if found is None:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(own.kinds.items())) or "no contributions yet"
        votes = ", ".join(f"{_path_of(index, problem, c)} ({c[:12]}) x{n}" for c, n in own.nominations.most_common(5))
        candidates = index.candidates(problem)  # the newest few, not a copy of them all
        reviewed = [{"path": path, "text": reviews_text(index, problem, commit)}
                    for path, commit in islice(reversed(candidates.items()), HEADER_REVIEWED)]
        found = kept["header"] = (counts, votes, reviewed, max(0, len(candidates) - HEADER_REVIEWED))
    return found


def _task(view: RunView, index: MemoryIndex, ep: EpisodePlan, rule: Rule, settled: bool,
          in_flight: int, share: int) -> tasks.Task | None:
    """The step the state block advises: an assigned review's one task; none for an isolated
    episode or a settled problem; else `tasks.next_task` (`share`: the workers per problem not
    settled, as the scheduler counts them), without reviews where the run assigns them, and
    `ASSIGNED` where the problem's next step is such a review (not this episode's)."""
    if ep.reviewing:
        return tasks.Task(tasks.REVIEW, 3, ep.assigned.path, ep.assigned.commit)
    if not ep.powers.sees_others or settled:
        return None
    busy, assigned = view.busy_on(ep.problem_id, ep.worker), "review" not in ep.kinds
    task = tasks.next_task(index, ep.problem_id, ep.worker, rule, busy, in_flight, reviews=not assigned,
                           share=share)
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


def overview(memory: Memory, view: RunView, index: MemoryIndex, ep: EpisodePlan, head: str) -> str:
    """The first prompt of an episode: statement, summary, and a fixed number of items (the
    most cited, then the newest; a codebase as one row), so its size does not grow with the
    memory, then the episodes in flight on the problem and the state; all of it from the step's
    view of main, `index` at its `seen_tip` (git thread)."""
    cfg = ep.terms
    base, at = f"problems/{ep.problem_id}", index.seen_tip or ep.start_commit
    statement = (memory.read_file(f"{base}/statement.md", at) or b"").decode()
    summary = (memory.read_file(f"{base}/SUMMARY.md", at) or b"").decode()
    summary = clip(summary, cfg.context_tokens // 3, "read SUMMARY.md for the rest")
    room = max(4, (cfg.context_tokens - tokens(statement) // 2 - tokens(summary)) // ROW_TOKENS)
    codebases = index.candidates(ep.problem_id)
    chosen = dict.fromkeys(candidate_path(p) for p, _ in index.shown(ep.problem_id, *cfg.shown))
    items = index.problems[ep.problem_id].items
    rows = []
    for path in list(chosen)[:room]:
        commit = codebases.get(path) or items[path]
        first = next(p for p in items if candidate_path(p) == path) if path.startswith("code/") else path
        rows.append({"path": path + ("/" if path.startswith("code/") else ""), "commit": commit,
                     "cited": index.cited[commit], "author": index.authors.get(commit) or "?",
                     "yours": index.authors.get(commit) == ep.worker, "mark": index.mark(commit),
                     "title": _title(memory, commit) if path.startswith("code/") else
                     _first_line(memory, f"{base}/{first}", at),
                     "review": reviews_text(index, ep.problem_id, commit)
                     if path.startswith(CANDIDATE_FOLDERS) else ""})
    total = len({candidate_path(p) for p in items})
    docs = own_files(memory, ep.problem_id, at)
    others = view.others_on(ep.problem_id, ep.worker) if ep.powers.sees_others else []
    return render("episode_start.md.j2", header=head, problem={"id": ep.problem_id, "title": ep.title},
                  statement=statement.strip(), summary=summary.strip(), items=rows,
                  total=total, in_flight=others[:10], code_work="" if ep.reviewing else _code_work(ep),
                  isolated=not ep.powers.sees_others, assigned=ep.reviewing, deliverable=ep.deliverable,
                  docs=docs,
                  executable=ep.executable if ep.kind in CODE_KINDS else None)


def own_files(memory: Memory, problem: str, at: str) -> list[dict]:
    """The problem's own files besides its statement (`OWN_FOLDERS`: documentation, starter
    files), relative to its folder, with their sizes in bytes (git thread)."""
    base, found = f"problems/{problem}/", []
    for folder in OWN_FOLDERS:
        for path in memory.files_under(base + folder, at):
            found.append({"path": path.removeprefix(base), "size": len(memory.read_file(path, at) or b"")})
    return sorted(found, key=lambda f: f["path"])


def _code_work(ep: EpisodePlan) -> str:
    """How to work with the shell, for the problems that have one ("" for the others); an
    episode that sees the memory builds on the codebases there, an isolated one on nothing."""
    if ep.kind not in CODE_KINDS:
        return ""
    return render("code_work.md.j2", kind=ep.kind, executable=ep.executable, builds_on=ep.powers.sees_memory)


def _first_line(memory: Memory, path: str, at: str) -> str:
    """The first line of text of a file, past its front matter (a review's, say)."""
    text = (memory.read_file(path, at) or b"").decode("utf-8", "replace")
    if text.startswith("---\n") and "\n---\n" in text[3:]:
        text = text[3:].split("\n---\n", 1)[1]
    for line in text.splitlines():
        line = re.sub(r"^#+\s+", "", line.strip())  # a Markdown heading's marks, not a `#!` line's
        if line and not line.startswith("---"):
            return _cell(line)
    return ""


def _title(memory: Memory, commit: str) -> str:
    """A codebase's title: its newest contribution's (its files' first lines are code, a
    compile.sh's `#!/bin/sh`)."""
    return _cell(memory.commit(commit).subject.partition("): ")[2])


def _cell(text: str) -> str:
    """`text` as one cell of the items table: 80 characters, a `|` escaped, not changed (a
    `10^100 | n!` written `10^100 / n!` says the opposite)."""
    return text[:80].replace("|", "\\|")
