"""Selection and settling: the verified candidate with the most nominations becomes SOLUTION.md.

One rule, over the engine's index (`MemoryIndex`), which the read model builds too:

- a candidate is *verified* when it has at least K `pass` reviews from distinct workers other
  than its author and no `critical` one (K = `SolveConfig.verify`; K = 0 verifies every
  candidate: plain plurality). A critical review blocks the attempt it reviews for good; a
  revision is a new attempt, which earns its own passes;
- the leader is the verified candidate with the most nominations, ties going to the referee's
  score, then to the commit id; when no candidate is verified, the plurality winner among the
  nominated ones, marked unverified;
- a problem settles when its leader is verified and has `settle_nominations` nominations.

`Rule` holds K and the nominations that settle, with their defaults; `SolveConfig` and the
read model take them from here, and `settled` is the one place that says which problems are
settled (the engine, the merger, a remote worker and the read model all call it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gitswarm.core.rule import Rule
from gitswarm.engine.index import CANDIDATE_FOLDERS, MemoryIndex, candidate_path
from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.problems.frontmatter import render


@dataclass(frozen=True)
class Standing:
    """What selection knows of one candidate."""

    commit: str
    nominations: int = 0
    passes: int = 0
    """`pass` reviews by distinct workers other than its author (their latest review of it)."""
    critical: int = 0
    """`critical` reviews, counted the same way."""


@dataclass(frozen=True)
class Choice:
    """The leader of a problem, and whether it is verified."""

    commit: str
    nominations: int
    verified: bool
    passes: int


@dataclass(frozen=True)
class Selected:
    """A problem's selected solution."""

    problem: str
    candidate: str
    path: str
    nominations: int
    verified: bool
    commit: str
    """The commit on main that wrote SOLUTION.md."""


def is_verified(passes: int, critical: int, verify: int) -> bool:
    """K passes and no critical review; K = 0 asks for nothing."""
    return verify == 0 or (critical == 0 and passes >= verify)


def choose(standings: Iterable[Standing], verify: int, scores: dict[str, float] | None = None) -> Choice | None:
    """The leader among `standings` by the module's rule; None when no candidate is verified
    and none is nominated."""
    scores = scores or {}
    pool = list(standings)
    verified = [s for s in pool if is_verified(s.passes, s.critical, verify) and (verify or s.nominations)]
    field = verified or [s for s in pool if s.nominations]
    if not field:
        return None
    best = min(field, key=lambda s: (-s.nominations, -scores.get(s.commit, -1.0), s.commit))
    return Choice(best.commit, best.nominations, bool(verified), best.passes)


def standings(index: MemoryIndex, problem: str) -> list[Standing]:
    """Every candidate of `problem` the engine's index knows, and every nominated commit."""
    votes = index.problems[problem].nominations
    commits = dict.fromkeys([*index.candidates(problem).values(), *votes])
    found = []
    for commit in commits:
        reviews = index.reviews_of(problem, commit)
        found.append(Standing(commit, votes.get(commit, 0), sum(r.verdict == "pass" for r in reviews),
                              sum(r.verdict == "critical" for r in reviews)))
    return found


def leader(index: MemoryIndex, problem: str, verify: int, scores: dict[str, float] | None = None) -> Choice | None:
    return choose(standings(index, problem), verify, scores)


def settles(choice: Choice | None, votes_needed: int) -> bool:
    return choice is not None and choice.verified and choice.nominations >= votes_needed


def settled(index: MemoryIndex, problems: list[str], rule: Rule) -> set[str]:
    """Problems whose leader is verified and has enough nominations: no more episodes go there.
    (The referee's scores only break ties between leaders with the same nominations, so they
    cannot change whether a problem is settled.)"""
    return {p for p in problems if settles(leader(index, p, rule.verify), rule.settle_nominations)}


def path_of(index: MemoryIndex, commit: str) -> str | None:
    """The candidate `commit` wrote, below its problem's folder (`attempts/<file>` or
    `code/<slug>`); None when the index knows no candidate of that commit."""
    files = index.files_of.get(commit, ("", []))[1]
    shown = next((f for f in files if f.startswith(CANDIDATE_FOLDERS)), None)
    return candidate_path(shown) if shown else None


def select(memory: Memory, index: MemoryIndex, problem: str, verify: int,
           scores: dict[str, float] | None = None) -> Selected | None:
    """Write `problems/<id>/SOLUTION.md` on main for the leader (git thread); an unverified
    leader is written too, marked so."""
    chosen = leader(index, problem, verify, scores)
    if chosen is None:
        return None
    files = index.files_of[chosen.commit][1]
    path = path_of(index, chosen.commit)
    body = _candidate_text(memory, problem, chosen.commit, path, files)
    mark = "verified" if chosen.verified else "unverified"
    text = render({"problem": problem, "candidate": chosen.commit, "path": f"problems/{problem}/{path}",
                   "nominations": chosen.nominations, "verification": mark, "passes": chosen.passes,
                   "verify": verify}, body)
    op = f"select-{problem}-{chosen.commit[:16]}-{chosen.nominations}-{mark}-{chosen.passes}"
    written = memory.commit_to_main(
        {f"problems/{problem}/SOLUTION.md": text.encode()},
        f"solution({problem}): {path}, {mark}, with {chosen.nominations} nomination(s)",
        commitmeta.Solution(op=op, problem=problem, candidate=chosen.commit, verification=mark))
    return Selected(problem, chosen.commit, f"problems/{problem}/{path}", chosen.nominations,
                    chosen.verified, written.commit)


def _candidate_text(memory: Memory, problem: str, commit: str, path: str, files: list[str]) -> str:
    if not path.startswith("code/"):
        return (memory.read_file(f"problems/{problem}/{path}", commit) or b"").decode("utf-8", "replace")
    parts = [f"Program files in `{path}/`:"]
    for f in sorted(x for x in files if x.startswith(path + "/")):
        text = (memory.read_file(f"problems/{problem}/{f}", commit) or b"").decode("utf-8", "replace")
        parts.append(f"\n## {f}\n\n```\n{text}\n```")
    return "\n".join(parts)
