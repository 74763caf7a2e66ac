"""Settling and selection: the candidate with the most nominations becomes SOLUTION.md."""

from __future__ import annotations

from dataclasses import dataclass

from gitswarm.engine.index import MemoryIndex
from gitswarm.memory.repo import Memory
from gitswarm.problems.frontmatter import render


@dataclass(frozen=True)
class Selected:
    """A problem's selected solution."""

    problem: str
    candidate: str
    path: str
    nominations: int
    commit: str
    """The commit on main that wrote SOLUTION.md."""


def settled(index: MemoryIndex, problems: list[str], votes_needed: int) -> set[str]:
    """Problems where one candidate has enough nominations: no more episodes go there."""
    return {p for p in problems
            if index.problems[p].nominations and
            index.problems[p].nominations.most_common(1)[0][1] >= votes_needed}


def choose(index: MemoryIndex, problem: str, scores: dict[str, float] | None = None) -> tuple[str, int] | None:
    """Most nominations; ties broken by the referee's score, then the first commit id."""
    votes = index.problems[problem].nominations
    if not votes:
        return None
    scores = scores or {}
    best = min(votes, key=lambda c: (-votes[c], -scores.get(c, -1.0), c))
    return best, votes[best]


def select(memory: Memory, index: MemoryIndex, problem: str,
           scores: dict[str, float] | None = None) -> Selected | None:
    """Write `problems/<id>/SOLUTION.md` on main for the chosen candidate (git thread)."""
    chosen = choose(index, problem, scores)
    if chosen is None:
        return None
    candidate, count = chosen
    files = index.files_of[candidate][1]
    shown = next(f for f in files if f.startswith(("attempts/", "code/")))
    path = "/".join(shown.split("/")[:2]) if shown.startswith("code/") else shown
    body = _candidate_text(memory, problem, candidate, path, files)
    text = render({"problem": problem, "candidate": candidate, "path": f"problems/{problem}/{path}",
                   "nominations": count}, body)
    op = f"select-{problem}-{candidate[:16]}-{count}"
    written = memory.commit_to_main({f"problems/{problem}/SOLUTION.md": text.encode()},
                                    f"solution({problem}): {path} with {count} nomination(s)", op,
                                    {"Problem": problem, "Kind": "solution", "Candidate": candidate})
    return Selected(problem, candidate, f"problems/{problem}/{path}", count, written.commit)


def _candidate_text(memory: Memory, problem: str, commit: str, path: str, files: list[str]) -> str:
    if not path.startswith("code/"):
        return (memory.read_file(f"problems/{problem}/{path}", commit) or b"").decode("utf-8", "replace")
    parts = [f"Program files in `{path}/`:"]
    for f in sorted(x for x in files if x.startswith(path + "/")):
        text = (memory.read_file(f"problems/{problem}/{f}", commit) or b"").decode("utf-8", "replace")
        parts.append(f"\n## {f}\n\n```\n{text}\n```")
    return "\n".join(parts)
