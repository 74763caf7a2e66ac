"""Review episodes: in a run whose reviews are assigned (`plan.review_role`: a reviewer
model, blind reviews, best-of-n), every review is an episode of its own, which the
scheduler assigns to one candidate as it starts, and which runs on the reviewer model.

- which episode reviews what (`assignment`): one whose worker's most useful step on its
  problem, by the rule the scheduler picked it with (`tasks.next_task`), is a review that counts;
- what a blind one sees (`readable`, `candidate_files`): the problem's own files (statement,
  documentation, starter files) and its candidate's, read at the candidate's commit; nothing
  of its author's notes or self-assessment, of other reviews, of the memory overview;
- what it is told: `prompts/review_system.md.j2`, and for a blind one `review_start.md.j2` and
  `review_header.md.j2` (a review that sees the memory has the usual prompts, with its
  assignment in the state block).

What it may do is its plan's (`engine.plan`, roles review and blind): read, check, stage its review, and end
with that review or an abstention.
"""

from __future__ import annotations

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import tasks
from gitswarm.engine.context import OWN_FOLDERS, clip, own_files, spending
from gitswarm.engine.plan import CODE_KINDS, Assignment, EpisodePlan, Role
from gitswarm.engine.runview import RunView
from gitswarm.memory.repo import Memory
from gitswarm.resources import render

PROBLEM_FILES = ("statement.md", *OWN_FOLDERS)
"""The problem's own files in its folder: the specification a blind review may read."""


def assignment(index: MemoryIndex, view: RunView, problem: str, worker: str, rule: Rule,
               reviews: Role | None) -> Assignment | None:
    """The candidate `worker` is to review on `problem` as its episode starts, or None when its
    most useful step there is not a review (or the run's reviews are not assigned: `reviews`,
    the role of its review episodes, `plan.review_role`, is None)."""
    if reviews is None:
        return None
    task = tasks.next_task(index, problem, worker, rule, view.busy_on(problem, worker))
    if task.action not in (tasks.REVIEW, tasks.VERIFY) or task.value <= 0:
        return None
    return Assignment(task.path, task.commit, reviews is Role.BLIND)


def readable(ep: EpisodePlan, rel: str) -> bool:
    """Whether a blind review may read `rel` (relative to its problem folder): the problem's
    own files and its candidate's; any other episode reads everything."""
    if ep.role is not Role.BLIND:
        return True
    path = ep.assigned.path
    own = rel == path or rel.startswith(path + "/")
    return own or any(rel == f or (f.endswith("/") and rel.startswith(f)) for f in PROBLEM_FILES)


def candidate_files(memory: Memory, ep: EpisodePlan) -> list[str]:
    """The files of the review's candidate at its commit, relative to the problem folder (git
    thread)."""
    base, path = f"problems/{ep.problem_id}/", ep.assigned.path
    if not path.startswith("code/"):
        return [path]
    return sorted(rel for item in memory.items(ep.problem_id, "code", ep.assigned.commit)
                  if (rel := item.path.removeprefix(base)).startswith(path + "/"))


def given_files(memory: Memory, ep: EpisodePlan) -> list[dict]:
    """The problem's own files besides its statement (documentation, starter files) at the
    candidate's commit, with their sizes (git thread)."""
    return own_files(memory, ep.problem_id, ep.start_commit)


def header(view: RunView, ep: EpisodePlan, step: int, staged: list[str]) -> str:
    """A blind review's state block: its assignment and what the run may still spend."""
    cfg, rule, review = ep.terms, ep.terms.rule, ep.assigned
    return render("review_header.md.j2", problem={"id": ep.problem_id, "kind": ep.kind}, episode=ep.episode,
                  worker=ep.worker, step=step, max_steps=cfg.max_steps,
                  budget_left=max(0, cfg.budget - view.charged), budget=cfg.budget, **spending(view, cfg),
                  path=review.path, commit=review.commit, verify=rule.verify, in_row=rule.in_row,
                  staged=", ".join(staged))


def first_prompt(memory: Memory, ep: EpisodePlan, head: str) -> str:
    """A blind review's first prompt: the statement and the candidate (an attempt's text, a
    codebase's file list), at the candidate's commit (git thread)."""
    review = ep.assigned
    base, at = f"problems/{ep.problem_id}", review.commit
    statement = (memory.read_file(f"{base}/statement.md", at) or b"").decode("utf-8", "replace")
    code = review.path.startswith("code/")
    text = "" if code else (memory.read_file(f"{base}/{review.path}", at) or b"").decode("utf-8", "replace")
    text = clip(text, ep.terms.context_tokens, f"read_file path={review.path} offset=... for the rest")
    candidate = {"path": review.path, "commit": at, "code": code, "text": text,
                 "files": candidate_files(memory, ep) if code else []}
    return render("review_start.md.j2", problem={"id": ep.problem_id, "title": ep.title},
                  statement=statement.strip(), executable=ep.executable if ep.kind in CODE_KINDS else None,
                  candidate=candidate, given=given_files(memory, ep), header=head)
