"""A problem's summary assembled without a model call: what the merger writes to SUMMARY.md
after a merge when no model summary is due (or the model's failed), so that no episode reads
"No work on this problem yet" above a list of items.

The digest lists the problem's candidates (path, author, title, review state: a revision's title
says what it revises), its notes and lemmas, and what the problem still needs
(`tasks.needs`). It replaces only the placeholder the run starts with and an earlier digest: a
summary a worker or the merger's model wrote stands until the next model summary, but its
standing (`STANDING` and below: the candidates' review states and what the problem needs) is
rewritten at every merge, so that what an episode reads there is what its state block says.
"""

from __future__ import annotations

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import context, tasks
from gitswarm.memory import objects
from gitswarm.memory.repo import INITIAL_SUMMARY, Memory
from gitswarm.resources import render

SHOWN = 12
"""Candidates, and notes and lemmas, each list shows (the newest)."""
MARK = "Assembled by gitswarm from the items"
"""The line by which a digest is known again (and replaced by the next)."""
STANDING = "<!-- gitswarm: the standing below is rewritten at every merge -->"
"""The line after which a written summary carries the standing gitswarm keeps up to date."""


def replaceable(text: str) -> bool:
    """SUMMARY.md holds the run's placeholder or an earlier digest, not a written summary."""
    return not text.strip() or text == INITIAL_SUMMARY or MARK in text


def assemble(memory: Memory, index: MemoryIndex, problem: str, rule: Rule, settled: bool) -> str | None:
    """The digest of `problem` on main now, or None when SUMMARY.md holds a written summary or
    the digest would not change it (git thread)."""
    path = f"problems/{problem}/SUMMARY.md"
    current = (memory.read_file(path) or b"").decode("utf-8", "replace")
    if not replaceable(current):
        kept = with_standing(memory, index, problem, rule, settled, current)
        return None if kept == current else kept
    own = index.problems[problem]
    candidates = _candidates(memory, index, problem)
    others = [{"path": p, "commit": c, "author": index.authors.get(c, "?"), "title": _title(memory, c)}
              for p, c in list(own.items.items())[::-1] if p.startswith(("notes/", "lemmas/"))][:SHOWN]
    reviews = sum(1 for p in own.items if p.startswith("reviews/"))
    if not candidates and not others and not reviews:
        return None
    text = render("summary_digest.md.j2", problem=problem, mark=MARK, candidates=candidates, others=others,
                  reviews=reviews, needs=tasks.needs(index, problem, rule, settled))
    return None if text == current else text


def with_standing(memory: Memory, index: MemoryIndex, problem: str, rule: Rule, settled: bool, text: str) -> str:
    """A written summary `text`, its standing (after `STANDING`) as main has it now (git thread)."""
    prose = text.split(STANDING, 1)[0].rstrip()
    standing = render("summary_standing.md.j2", mark=STANDING, candidates=_candidates(memory, index, problem),
                      needs=tasks.needs(index, problem, rule, settled))
    return f"{prose}\n\n{standing}"


def _candidates(memory: Memory, index: MemoryIndex, problem: str) -> list[dict]:
    """The problem's newest candidates, as the digest and the standing list them."""
    own = index.problems[problem]
    return [{"path": p, "commit": c, "author": index.authors.get(c, "?"), "title": _title(memory, c),
             "reviews": context.reviews_text(index, problem, c), "nominations": own.nominations[c]}
            for p, c in list(index.candidates(problem).items())[::-1][:SHOWN]]


def _title(memory: Memory, commit: str) -> str:
    """The subject of the commit that wrote an item (a contribution's title)."""
    subject = objects.commit(memory.repo, commit).message.split("\n", 1)[0]
    return subject.split(": ", 1)[1] if ": " in subject else subject
