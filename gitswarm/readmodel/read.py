"""Read a run into its read model: the engine's index over main, main's tree, the ledger's
totals and the grades, once.

Candidates, reviews, verification, nominations, settling and the leader come from the same
code the engine selects with: a `MemoryIndex` over main's history (the commits' trailers)
and `domain.selection`'s rule over it, so a view cannot show a leader selection would not
write. Main's tree gives the rest (item counts, the kind, SOLUTION.md), kept by each problem
folder's tree id (`readmodel.folders`, so a read unpacks only the folders that changed); the ledger's
scheduler record the rule the run uses and the problems set aside.
"""

from __future__ import annotations

import re
from collections import defaultdict

from gitswarm.domain import selection
from gitswarm.domain.candidate import Candidate
from gitswarm.domain.episode import Totals
from gitswarm.domain.grade import Grade, scores_of
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import Verification
from gitswarm.domain.review import ReviewCounts
from gitswarm.domain.rule import Rule
from gitswarm.domain.selection import Selection
from gitswarm.memory import ledgerbook
from gitswarm.memory.repo import Memory
from gitswarm.memory.snapshot import Snapshot, Tree
from gitswarm.readmodel.folders import FILE, Folder, Folders
from gitswarm.readmodel.model import FOLDERS, Counts, ProblemState, RunState, RunTotals
from gitswarm.readmodel.reviews import ProblemReviews, read_reviews
from gitswarm.readmodel.tree import FRONTS
from gitswarm.readmodel.workers import read_workers
from gitswarm.referee.grades import GradeStore

__all__ = ["read_run", "rule_of", "scheduler_record", "shown_grade"]
KIND = re.compile(r"^- kind:\s*(\w+)", re.M)


def read_run(memory: Memory, index: MemoryIndex | None = None) -> RunState:
    """The read model of the run `memory` opens, as it stands now. `index` is one a caller
    keeps from read to read (brought up to main here, so only new commits are read); without
    it, the one kept beside the run (`memory.indexfile`), brought up to main."""
    snapshot = memory.snapshot()  # once: the index and the tree read the same main
    root = snapshot.tree()
    if index is None:
        index = snapshot.kept_index()
    else:
        snapshot.catch_up(index)
    state = scheduler_record(memory)
    aside = {str(p) for p in state.get("set_aside") or ()}
    rule = Rule.from_record(state.get("selection"))
    store = GradeStore(memory)
    pids = memory.problems()
    settled = selection.settled(index, pids, rule)
    folders, problems_tree = Folders(snapshot.kept_file(FILE)), snapshot.subtree(root, "problems")
    problems = tuple(read_problem(pid, read_folder(snapshot, problems_tree, pid, folders), index, store, rule,
                                  pid in aside, pid in settled) for pid in pids)
    folders.save()
    totals = run_totals(memory.run_id, ledgerbook.summary(memory), len(snapshot.pending))
    return RunState(totals, problems, read_workers(snapshot, state))


def scheduler_record(memory: Memory) -> dict:
    """The ledger's scheduler record (its `set_aside` list, its `selection` rule); empty when
    the run has none yet."""
    state = memory.record(ledgerbook.BOOK, ledgerbook.SCHEDULER) or {}
    return state if isinstance(state, dict) else {}


def rule_of(state: dict) -> tuple[int, int]:
    """(verify, settle_nominations) as the run records them, else the engine's defaults."""
    rule = Rule.from_record(state.get("selection"))
    return rule.verify, rule.settle_nominations


def run_totals(run_id: str, spent: Totals, pending: int) -> RunTotals:
    """The ledger's totals and the number of branches still to merge."""
    cost, known = spent.cost
    return RunTotals(run_id, spent.episodes, spent.charged, spent.tokens_in, spent.cache_read,
                     spent.cache_write, spent.reasoning, spent.tokens_out, spent.calls, spent.failed_calls,
                     spent.estimated_tokens, cost, known, pending, spent.failures())


def shown_grade(grades: list[Grade]) -> Grade | None:
    """The grade to show of one candidate's grades: one with a score beats one without, then
    the newest (ties: the last key). None when there is none."""
    return max(grades, key=lambda g: (g.graded, g.time, g.key), default=None)


def read_folder(snapshot: Snapshot, problems: Tree | None, pid: str, folders: Folders) -> Folder:
    """What main's tree says of problem `pid` (`problems`: main's `problems/` folder): its
    folder's counts, kind and selection, read from the trees only when `folders` does not
    already hold that folder's tree."""
    tree_id = snapshot.folder_id(problems, pid)

    def make() -> Folder:
        base = snapshot.subtree(problems, pid)
        return Folder(Counts(**{f: _count(snapshot, base, f) for f in FOLDERS}), _kind(snapshot, base),
                      _selection(snapshot, base))

    return folders.get(tree_id, make) if tree_id is not None else make()


def read_problem(pid: str, folder: Folder, index: MemoryIndex, store: GradeStore, rule: Rule, aside: bool,
                 settled: bool) -> ProblemState:
    """One problem's state: its candidates, reviews, nominations and leader from `index` by
    `domain.selection`'s rule (`settled`: `selection.settled` says so), its counts, kind and
    selection from its folder on main (`read_folder`), its grades from `store`."""
    counts, selected = folder.counts, folder.selected
    votes = index.problems[pid].nominations
    grades = store.for_problem(pid)
    candidates = _candidates(index, pid, grades, read_reviews(index, pid, rule.people_count), rule)
    chosen = selection.leader(index, pid, rule, scores_of(grades) if grades else None)
    stands_on = selected.candidate if selected else chosen.commit if chosen else None
    grade = shown_grade([g for g in grades if g.candidate == stands_on]) if stands_on else None
    state = _state(counts, bool(votes), selected, settled, aside)
    verified = selected.verified if selected else chosen.verified if chosen else None
    return ProblemState(pid, folder.kind, state, counts, candidates, selected,
                        chosen.commit if chosen else None, grade, verified, rule.verify)


def _state(counts: Counts, nominated: bool, selected: Selection | None, is_settled: bool, aside: bool) -> str:
    if selected:
        return "selected"
    if is_settled:
        return "settled"
    if aside:
        return "set aside"
    if nominated:
        return "nominated"
    return "candidate" if counts.candidates else "in progress" if counts.work else "open"


def _verified(standing: selection.Standing | None, counted: ReviewCounts, rule: Rule) -> bool:
    """Verified as selection counts it (its standing: passes in a row where the rule asks for
    them); a commit selection does not weigh, by its counted reviews."""
    if standing is not None:
        return rule.is_verified(standing.passes, standing.critical)
    return rule.is_verified(counted.passed, counted.critical)


def _candidates(index: MemoryIndex, pid: str, grades: list[Grade], reviews: ProblemReviews,
                rule: Rule) -> tuple[Candidate, ...]:
    """Every candidate selection weighs (each on main, each nominated), then those a grade or a
    review names: the most nominated first."""
    votes = index.problems[pid].nominations
    graded: dict[str, list[Grade]] = defaultdict(list)
    for g in grades:
        graded[g.candidate].append(g)
    standings = {s.commit: s for s in selection.standings(index, pid, rule)}
    commits = dict.fromkeys([*standings, *reviews.paths, *graded])
    found = []
    for commit in commits:
        path = _path(index, pid, commit) or next((g.path for g in graded.get(commit, ())), f"problems/{pid}")
        counted = reviews.counts.get(commit, ReviewCounts())
        found.append(Candidate(path, commit, votes.get(commit, 0), shown_grade(graded.get(commit, [])), counted,
                               _verified(standings.get(commit), counted, rule), reviews.trails.get(commit, ())))
    return tuple(sorted(found, key=lambda c: (-c.nominations, c.path, c.commit or "")))


def _path(index: MemoryIndex, pid: str, commit: str) -> str | None:
    path = index.path_of(commit)
    return f"problems/{pid}/{path}" if path else None


def _selection(snapshot: Snapshot, base: Tree | None) -> Selection | None:
    values = snapshot.parsed(FRONTS, base, "SOLUTION.md") or {}
    if not values.get("candidate") or not values.get("path"):
        return None
    count = str(values.get("nominations") or "")
    mark = values.get("verification")
    marks = {v.value: v for v in Verification}
    return Selection(str(values["candidate"]), str(values["path"]), int(count) if count.isdigit() else None,
                     None if mark not in marks else mark == Verification.VERIFIED,
                     mark == Verification.REJECTED)


def _kind(snapshot: Snapshot, base: Tree | None) -> str:
    found = KIND.search((snapshot.blob(base, "statement.md") or b"").decode("utf-8", "replace"))
    return found.group(1) if found else "?"


def _count(snapshot: Snapshot, base: Tree | None, folder: str) -> int:
    """Items below `folder` of the tree `base` (files; for `code`, codebases), counted from trees
    alone (no blob is read): a diff against the empty tree counts them in libgit2, 3x faster than
    walking the entries."""
    sub = snapshot.subtree(base, folder)
    if sub is None:
        return 0
    if folder == "code":  # a codebase `code/<slug>/` is one candidate, whatever its files
        return len({d.new_file.path.split("/", 1)[0] for d in sub.diff_to_tree(swap=True).deltas})
    return len(sub.diff_to_tree(swap=True))
