"""`gitswarm replay RUN --problem P --candidate C`: does the memory an attempt cited cause its
result? Reuse in the commit graph is only correlation; the replay intervenes. From the state
C's author started from (C's first parent, its start commit) it runs fresh episodes on P twice:
with the memory as it was, and with the files of the commits C cites deleted from
`problems/<P>/` by one commit on top of that state. Each episode is a run of its own (one
episode, budget 1) made from the original run without touching it (`replay_arms`), so every
episode of an arm is an independent draw from the same state; the draws are run and graded by
`replay_draws`, and the arms compared by `replay_tally`.

This module checks the inputs: one paragraph (`ReplayError`, exit 2) before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from gitswarm.errors import BadInput
from gitswarm.memory.commitmeta import git_key
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.model import CommitInfo
from gitswarm.memory.paths import WRITABLE_TOP
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import Kind, Problem, ProblemSet

CANDIDATE_KINDS = ("attempt", "code")
RECORD = "replay.json"
"""The replay's folder's record of what it replays and with which settings."""


class ReplayError(BadInput):
    """Input a replay cannot start from: one paragraph naming the cause and the fix (exit 2)."""


@dataclass(frozen=True)
class Target:
    """A checked replay: the attempt C of problem P in a run, its start state and the memory it cited."""

    run: Path
    run_id: str
    problem: Problem
    """P, with its hidden parts (the referee's key or tests)."""
    problem_set: ProblemSet
    candidate: str
    """C's full id."""
    kind: str
    start: str
    """C's first parent: the memory state C's episode started from."""
    cited: tuple[str, ...]
    """The commits C cites (its record's `informed_by`)."""
    removed: tuple[str, ...]
    """The files of the cited commits present in the start state, relative to `problems/<P>/`:
    what the without-memory arm deletes."""
    selection: dict
    """The original run's selection rule (`verify`, `settle_nominations`), which the state
    header's advice follows: the draws run under the same."""

    def describe(self) -> dict:
        """What the replay is of, as replay.json and `--json` give it."""
        return {"run": str(self.run), "run_id": self.run_id, "problem": self.problem.id, "candidate": self.candidate,
                "kind": self.kind, "start": self.start, "cited": list(self.cited), "removed": list(self.removed)}


def check(run: Path, problem: str, candidate: str, set_path: Path | None = None) -> Target:
    """The replay of `candidate` on `problem` in the run at `run`, or ReplayError."""
    memory = Memory(run)
    if problem not in memory.problems():
        raise ReplayError(f"no problem {problem!r} in the run {run} (it has: {', '.join(memory.problems())})")
    found = _commit(memory, run, candidate)
    short = found.id[:10]
    if found.problem != problem:
        what = f"a commit of problem {found.problem}" if found.problem else "not a contribution of any problem"
        raise ReplayError(f"{candidate} ({short}) is {what}, not of {problem}: give an attempt commit of "
                          f"{problem} (git -C {run} log --grep='{git_key('problem')}: {problem}' main)")
    if found.kind not in CANDIDATE_KINDS:
        raise ReplayError(f"{candidate} ({short}) is a {found.kind or 'commit without a kind'}, not an attempt: a "
                          "replay asks whether the memory an attempt (or code) built on caused its result; give an "
                          f"attempt commit (git -C {run} log --grep='{git_key('kind')}: attempt' main)")
    if not found.informed_by:
        raise ReplayError(f"{candidate} ({short}) cites nothing: there is no inherited memory to remove (its "
                          f"{git_key('informed_by')} trailer is empty); give an attempt that cites earlier work")
    start = found.parents[0]
    removed = _cited_files(memory.reader(), problem, start, found.informed_by)
    if not removed:
        raise ReplayError(f"the commits {candidate} ({short}) cites wrote nothing under problems/{problem}/ that "
                          f"its start state {start[:10]} holds (they are of another problem, or reached main "
                          "after its episode started): removing them would change nothing")
    problem_set = load_problems(memory, set_path)
    found_problem = next((p for p in problem_set.problems if p.id == problem), None)
    if found_problem is None:
        raise ReplayError(f"the problem set {problem_set.path} has no problem {problem!r}; pass the set the run "
                          "was made from with --set DIR")
    state = memory.record("ledger", "scheduler.json")
    selection = state.get("selection") if isinstance(state, dict) else None
    return Target(Path(run), memory.run_id, found_problem, problem_set, found.id, found.kind, start,
                  tuple(found.informed_by), removed, dict(selection or {}))


def gradable(problem: Problem, judge: object | None) -> None:
    """Refuse a problem whose attempts the referee cannot judge: a replay counts accepted ones."""
    if problem.kind == Kind.PROOF and judge is None:
        raise ReplayError(f"{problem.id} is a proof problem: its attempts cannot be judged without a referee "
                          "model, so no episode could be counted as accepted; give --referee-model MODEL (or "
                          "GITSWARM_REFEREE_MODEL)")
    if problem.kind == Kind.ANSWER and not problem.answer:
        raise ReplayError(f"{problem.id} has no answer key in {problem.path}: its attempts cannot be graded; add "
                          "`answer:` to its front matter, or pass the set with the keys with --set DIR")
    if problem.kind == Kind.PROGRAM and problem.tests_dir is None:
        raise ReplayError(f"{problem.id} has no hidden tests in its set: its programs cannot be graded; pass the "
                          "set with the tests with --set DIR")


def _commit(memory: Memory, run: Path, candidate: str) -> CommitInfo:
    reader = memory.reader()
    resolved = reader.resolve(candidate)
    if resolved is None:
        raise ReplayError(f"no commit {candidate!r} in the run {run}; give an attempt's commit id as "
                          f"`git -C {run} log main` shows it")
    commit = memory.commit(resolved)
    if not reader.in_history(resolved, memory.main()) or not commit.parents:
        raise ReplayError(f"{candidate} ({str(commit.id)[:10]}) is not a contribution on the main history of "
                          f"{run}: a replay starts from the state an episode of the run started from")
    return commit


def _cited_files(repo: GitReader, problem: str, start: str, cited: list[str]) -> tuple[str, ...]:
    """The files the cited commits added or changed under `problems/<problem>/` (the items they
    wrote, never the statement), those present in the start state."""
    prefix = f"problems/{problem}/"
    found: set[str] = set()
    for ref in cited:
        commit = repo.resolve(ref)
        if commit is None:
            continue  # validated when it was written: a citation of a commit no longer here removes nothing
        for path in repo.written(commit):  # none for the run's first commit: the statements, never an item
            rel = path.removeprefix(prefix)
            if path.startswith(prefix) and rel.split("/")[0] in WRITABLE_TOP and repo.file(start, path) is not None:
                found.add(rel)
    return tuple(sorted(found))


def load_problems(memory: Memory, set_path: Path | None) -> ProblemSet:
    """The run's problem set with its hidden parts: `set_path`, else the folder the run was made
    from, else the shipped set of its name."""
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.resources import resolve_set

    recorded = memory.meta.get("set_path")
    source = set_path or (Path(recorded) if recorded and Path(recorded).is_dir() else None)
    try:
        return load_set(source or resolve_set(memory.meta.get("set", "")))
    except (ProblemSetError, FileNotFoundError, NotADirectoryError) as exc:
        why = exc.defects[0] if isinstance(exc, ProblemSetError) else "no such folder"
        raise ReplayError(f"cannot load the problem set {str(source or memory.meta.get('set'))!r} with the hidden "
                          f"parts ({why}); pass the set the run was made from with --set DIR") from None


@dataclass(frozen=True)
class Settings:
    """What the draws are made with; a replay's folder is resumed only under the same."""

    model: str
    seed: int
    api_base: str | None = None
    max_output_tokens: int | None = None
    max_steps: int | None = None
    reasoning_effort: str | None = None
    scripted: dict | None = None


def claim_folder(out: Path, target: Target, settings: Settings) -> None:
    """Write the replay's record in `out`, or check that the one there is this replay's with
    the same settings (the number of episodes may grow)."""
    path = out / RECORD
    mine = {"replay": target.describe(), "settings": asdict(settings)}
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(mine, indent=2) + "\n", encoding="utf-8")
        return
    except json.JSONDecodeError:
        raise ReplayError(f"{path} is not readable JSON: remove {out} to start this replay again") from None
    changed = [f"{part}.{k}: {before.get(part, {}).get(k)!r} -> {v!r}" for part in ("replay", "settings")
               for k, v in mine[part].items() if k != "run" and before.get(part, {}).get(k) != v]
    if changed:
        raise ReplayError(f"{out} holds a replay made otherwise ({'; '.join(changed)}); give another --out, or "
                          f"remove {out} to start again")
