"""Write each problem's selection: the candidate the rule picks (`domain.selection`) becomes
`problems/<id>/SOLUTION.md` on main."""

from __future__ import annotations

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import Verification
from gitswarm.domain.rule import Rule
from gitswarm.domain.selection import Selection, leader
from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.problems.frontmatter import render


def select(memory: Memory, index: MemoryIndex, problem: str, rule: Rule,
           scores: dict[str, float] | None = None) -> Selection | None:
    """Write `problems/<id>/SOLUTION.md` on main for the leader (git thread); an unverified
    leader is written too, marked so, and one every candidate's reviews rejected is marked
    `rejected by reviews` (the one with the fewest critical reviews: docs/verification.md)."""
    chosen = leader(index, problem, rule, scores)
    if chosen is None:
        return None
    files = index.files_of[chosen.commit][1]
    path = index.path_of(chosen.commit)
    assert path is not None  # a leader is a candidate: nominations name one (finals, remote.named)
    body = _candidate_text(memory, problem, chosen.commit, path, files)
    mark = chosen.mark.value
    text = render({"problem": problem, "candidate": chosen.commit, "path": f"problems/{problem}/{path}",
                   "nominations": chosen.nominations, "verification": mark, "passes": chosen.passes,
                   "verify": rule.verify}, body)
    op = f"select-{problem}-{chosen.commit[:16]}-{chosen.nominations}-{mark.split()[0]}-{chosen.passes}"
    written = memory.commit_to_main(
        {f"problems/{problem}/SOLUTION.md": text.encode()},
        f"solution({problem}): {path}, {mark}, with {chosen.nominations} nomination(s)",
        commitmeta.Solution(op=op, problem=problem, candidate=chosen.commit, verification=chosen.mark))
    return Selection(chosen.commit, f"problems/{problem}/{path}", chosen.nominations, chosen.verified,
                     chosen.mark is Verification.REJECTED, problem, written.commit)


def _candidate_text(memory: Memory, problem: str, commit: str, path: str, files: list[str]) -> str:
    if not path.startswith("code/"):
        return (memory.read_file(f"problems/{problem}/{path}", commit) or b"").decode("utf-8", "replace")
    parts = [f"Program files in `{path}/`:"]
    for f in sorted(x for x in files if x.startswith(path + "/")):
        text = (memory.read_file(f"problems/{problem}/{f}", commit) or b"").decode("utf-8", "replace")
        parts.append(f"\n## {f}\n\n```\n{text}\n```")
    return "\n".join(parts)
