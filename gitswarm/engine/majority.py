"""Selection without reviews or nominations: the majority of final answers (self-consistency).

A run whose episodes work independently (`SolveConfig.isolation` independent) has no reviews
and no nominations, so the swarm's rule (`selection`) has nothing to count. For an answer
problem the plain vote of its attempts' final answers stands in: answers the referee's
equivalence judges equal (`3/4` and `0.75`) vote together, the largest group wins, ties go
to the group whose first attempt came first, and its first attempt is written to SOLUTION.md,
marked unverified (no one checked it), with the vote it won.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import Verification
from gitswarm.domain.selection import Selection
from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.problems.frontmatter import render

EQUIVALENCE_TIMEOUT_S = 2.0
"""The referee's symbolic check between two distinct answers, at most this long each."""


@dataclass
class Group:
    """Attempts whose final answers are equivalent: the first one's answer stands for them."""

    answer: str
    paths: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)


def tally(answers: list[tuple[str, str, str]]) -> list[Group]:
    """(path, commit, answer) of each attempt, oldest first, grouped by equivalent answers,
    the groups in order of their first attempt."""
    from gitswarm.referee.answers import equivalent

    groups: list[Group] = []
    for path, commit, answer in answers:
        group = next((g for g in groups if equivalent(answer, g.answer, timeout=EQUIVALENCE_TIMEOUT_S).equal),
                     None)
        if group is None:
            group = Group(answer)
            groups.append(group)
        group.paths.append(path)
        group.commits.append(commit)
    return groups


def select_by_answers(memory: Memory, index: MemoryIndex, problem: str) -> Selection | None:
    """Write the majority answer's first attempt as `problems/<id>/SOLUTION.md` on main (git
    thread); None when no attempt states a final answer."""
    from gitswarm.referee.answers import extract_answer

    answers = []
    for path, commit in index.candidates(problem).items():
        text = (memory.read_file(f"problems/{problem}/{path}", commit) or b"").decode("utf-8", "replace")
        answer = extract_answer(text)
        if answer:
            answers.append((path, commit, answer))
    groups = tally(answers)
    if not groups:
        return None
    best = max(groups, key=lambda g: len(g.paths))  # max keeps the first of equal groups
    path, commit, votes = best.paths[0], best.commits[0], len(best.paths)
    body = (memory.read_file(f"problems/{problem}/{path}", commit) or b"").decode("utf-8", "replace")
    vote = f"{votes} of {len(answers)} attempts answer {best.answer}"
    text = render({"problem": problem, "candidate": commit, "path": f"problems/{problem}/{path}",
                   "nominations": 0, "verification": "unverified", "selected_by": f"majority of answers: {vote}"},
                  body)
    written = memory.commit_to_main(
        {f"problems/{problem}/SOLUTION.md": text.encode()},
        f"solution({problem}): {path}, by the majority of answers ({vote})",
        commitmeta.Solution(op=f"select-{problem}-{commit[:16]}-majority-{votes}-of-{len(answers)}",
                            problem=problem, candidate=commit, verification=Verification.UNVERIFIED))
    return Selection(commit, f"problems/{problem}/{path}", 0, False, problem=problem, commit=written.commit)
