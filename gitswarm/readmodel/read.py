"""Read a run into its read model: main's tree, the ledger's totals and the grades, once.

Never walks the history: every figure comes from one tree lookup per problem folder, the
ledger's scheduler record (`Ledger.summary`), the grades ref, and the trailers of the few
review commits and reviewed candidates (`reviews.read_reviews`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pygit2
from pygit2.enums import FileMode

from gitswarm.engine.ledger import BOOK, Ledger, Totals
from gitswarm.engine.selection import Standing, choose, is_verified, settles
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.model import (
    FOLDERS,
    Candidate,
    Counts,
    ProblemState,
    ReviewCounts,
    RunState,
    RunTotals,
    Selection,
)
from gitswarm.readmodel.reviews import ProblemReviews, read_reviews
from gitswarm.readmodel.tree import blob, front, subtree
from gitswarm.readmodel.workers import read_workers
from gitswarm.referee.grades import Grade, GradeStore

SETTLE_NOMINATIONS = 3
VERIFY = 2
"""`SolveConfig.settle_nominations` and `verify` defaults (a test pins them together), for a
run whose ledger does not record the values it runs with (importing the engine's config
would cost `status` 90 ms of start-up)."""
KIND = re.compile(r"^- kind:\s*(\w+)", re.M)


def read_run(memory: Memory) -> RunState:
    """The read model of the run `memory` opens, as it stands now."""
    root = main_tree(memory)
    state = scheduler_record(memory)
    aside = {str(p) for p in state.get("set_aside") or ()}
    rule = rule_of(state)
    store = GradeStore(memory)
    problems = tuple(read_problem(memory, pid, root, store, pid in aside, rule) for pid in memory.problems())
    return RunState(run_totals(memory, Ledger.summary(memory)), problems, read_workers(memory.repo, state))


def main_tree(memory: Memory) -> pygit2.Tree:
    """Main's tree, resolved once per read."""
    return memory.repo.revparse_single(memory.main()).peel(pygit2.Tree)


def scheduler_record(memory: Memory) -> dict:
    """The ledger's scheduler record (its `set_aside` list, its `selection` rule); empty when
    the run has none yet."""
    state = memory.record(BOOK, "scheduler.json") or {}
    return state if isinstance(state, dict) else {}


def rule_of(state: dict) -> tuple[int, int]:
    """(verify, settle_nominations) as the run records them, else the engine's defaults."""
    rule = state.get("selection") if isinstance(state.get("selection"), dict) else {}
    verify, needed = rule.get("verify"), rule.get("settle_nominations")
    return (verify if isinstance(verify, int) else VERIFY,
            needed if isinstance(needed, int) else SETTLE_NOMINATIONS)


def run_totals(memory: Memory, spent: Totals) -> RunTotals:
    """The ledger's totals and the branches still to merge."""
    cost, known = spent.cost
    return RunTotals(memory.run_id, spent.episodes, spent.charged, spent.tokens_in, spent.cache_read,
                     spent.cache_write, spent.reasoning, spent.tokens_out, spent.calls, spent.failed_calls,
                     spent.estimated_tokens, cost, known, len(memory.pending()), spent.failures())


def shown_grade(grades: list[Grade]) -> Grade | None:
    """The grade to show of one candidate's grades: one with a score beats one without, then
    the newest (ties: the last key). None when there is none."""
    return max(grades, key=lambda g: (g.graded, g.time, g.key), default=None)


def read_problem(memory: Memory, pid: str, root: pygit2.Tree, store: GradeStore, aside: bool,
                 rule: tuple[int, int] = (VERIFY, SETTLE_NOMINATIONS)) -> ProblemState:
    """One problem's state from main's tree (`root`) and its grades, judged by `rule`
    (verify, settle_nominations): `engine.selection`'s rule, on what main's tree shows."""
    repo = memory.repo
    verify, needed = rule
    base = subtree(repo, root, f"problems/{pid}")
    counts = Counts(**{f: _count(repo, base, f) for f in FOLDERS})
    votes, named = _nominations(repo, base, pid)
    grades = store.for_problem(pid)
    reviews = read_reviews(repo, base, pid)
    candidates = _candidates(repo, base, pid, votes, named, grades, reviews, verify)
    chosen = choose((Standing(c.commit, c.nominations, c.reviews.passed, c.reviews.critical)
                     for c in candidates if c.commit), verify, store.scores(pid) if grades else None)
    selected = _selection(repo, base)
    stands_on = selected.candidate if selected else chosen.commit if chosen else None
    grade = shown_grade([g for g in grades if g.candidate == stands_on]) if stands_on else None
    state = _state(counts, votes, selected, settles(chosen, needed), aside)
    verified = selected.verified if selected else chosen.verified if chosen else None
    return ProblemState(pid, _kind(repo, base), state, counts, candidates, selected,
                        chosen.commit if chosen else None, grade, verified, verify)


def _state(counts: Counts, votes: Counter, selected: Selection | None, is_settled: bool, aside: bool) -> str:
    if selected:
        return "selected"
    if is_settled:
        return "settled"
    if aside:
        return "set aside"
    if votes:
        return "nominated"
    return "candidate" if counts.candidates else "in progress" if counts.work else "open"


def _nominations(repo: pygit2.Repository, base, pid: str) -> tuple[Counter, dict[str, str]]:
    """Votes per candidate commit, and the path each nominated commit was nominated as."""
    votes: Counter = Counter()
    named: dict[str, str] = {}
    for entry in subtree(repo, base, "nominations") or ():
        values = front(repo[entry.id].data) if entry.filemode != FileMode.TREE else {}
        commit = str(values.get("candidate") or "")
        if commit:
            votes[commit] += 1
            named.setdefault(commit, f"problems/{pid}/{values.get('path') or ''}".rstrip("/"))
    return votes, named


def _candidates(repo, base, pid: str, votes: Counter, named: dict[str, str], grades: list[Grade],
                reviews: ProblemReviews, verify: int) -> tuple[Candidate, ...]:
    """Nominated, graded and reviewed candidates, then those on main's tree that none names."""
    graded: dict[str, list[Grade]] = defaultdict(list)
    for g in grades:
        graded[g.candidate].append(g)
    keys = dict.fromkeys([(path, commit) for commit, path in named.items()]
                         + [(g.path, g.candidate) for g in grades]
                         + [(path, commit) for commit, path in reviews.paths.items()])
    known = {path for path, _ in keys}
    keys.update(dict.fromkeys((path, None) for path in _on_tree(repo, base, pid) if path not in known))
    found = []
    for path, commit in keys:
        counted = reviews.counts.get(commit, ReviewCounts()) if commit else ReviewCounts()
        found.append(Candidate(path, commit, votes.get(commit, 0) if commit else 0,
                               shown_grade(graded.get(commit, [])) if commit else None, counted,
                               bool(commit) and is_verified(counted.passed, counted.critical, verify),
                               reviews.trails.get(commit, ()) if commit else ()))
    return tuple(sorted(found, key=lambda c: (-c.nominations, c.path, c.commit or "")))


def _on_tree(repo, base, pid: str) -> list[str]:
    """Attempt files and program folders on main."""
    found = []
    for folder, want_tree in (("attempts", False), ("code", True)):
        for entry in subtree(repo, base, folder) or ():
            if (entry.filemode == FileMode.TREE) == want_tree:
                found.append(f"problems/{pid}/{folder}/{entry.name}")
    return found


def _selection(repo, base) -> Selection | None:
    values = front(blob(repo, base, "SOLUTION.md"))
    if not values.get("candidate") or not values.get("path"):
        return None
    count = str(values.get("nominations") or "")
    mark = values.get("verification")
    return Selection(str(values["candidate"]), str(values["path"]), int(count) if count.isdigit() else None,
                     None if mark not in ("verified", "unverified") else mark == "verified")


def _kind(repo, base) -> str:
    found = KIND.search((blob(repo, base, "statement.md") or b"").decode("utf-8", "replace"))
    return found.group(1) if found else "?"


def _count(repo, base, folder: str) -> int:
    """Files below `folder` of the tree `base`, counted from trees alone (no blob is read): a
    diff against the empty tree counts them in libgit2, 3x faster than walking the entries."""
    sub = subtree(repo, base, folder)
    return 0 if sub is None else len(sub.diff_to_tree(swap=True))
