"""The contribution graph of a problem and the compounding figures of a run.

Definitions (the report prints them too):

- The *contributions* of a problem are the commits whose record (`commitmeta`) names it
  and whose kind is note, lemma, attempt, review or code (nominations, summaries,
  solutions and merges are not contributions), found on main and on unmerged branches.
- A contribution c was *built on* when some other contribution d of the same problem
  either cites c (its record's `informed_by`) or inherited it: c is an ancestor (by parent
  links) of d's start commit, the first parent of d. The *built-on share* is the number of
  contributions built on over the number of contributions.
- The *ancestry* of the selected candidate is every commit reachable from it by following
  parent links and citations (repeatedly), the candidate included. The *ancestry share* is
  the number of the problem's contributions in that ancestry over the number of its
  contributions.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gitswarm.memory.read import info
from gitswarm.memory.snapshot import Snapshot

CONTRIBUTION_KINDS = ("note", "lemma", "attempt", "review", "code")


@dataclass(frozen=True)
class Node:
    """A commit of the memory with the links the figures follow."""

    id: str
    kind: str
    problem: str
    author: str
    subject: str
    parents: tuple[str, ...]
    cited: tuple[str, ...]
    candidate: str = ""
    """The nominated candidate, on a nomination."""
    episode: str = ""
    """The episode that made it."""
    worker: str = ""
    """The worker that made it."""
    files: tuple[str, ...] = ()
    """The files it wrote, relative to its problem's folder (`commitmeta.changes`)."""
    reviews: str = ""
    """The reviewed candidate's commit, on a review."""
    verdict: str = ""
    """pass, gaps or critical, on a review."""


@dataclass
class Graph:
    """Every commit reachable from main and the unmerged branches, by id."""

    nodes: dict[str, Node] = field(default_factory=dict)

    def contributions(self, problem: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.problem == problem and n.kind in CONTRIBUTION_KINDS]

    def closure(self, start: str, citations: bool = True) -> set[str]:
        """Commits reachable from `start` by parents (and citations), `start` included."""
        seen, todo = {start}, deque([start])
        while todo:
            node = self.nodes.get(todo.popleft())
            if node is None:
                continue
            for nxt in node.parents + (node.cited if citations else ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen


def load(snapshot: Snapshot, heads: list[str] | None = None) -> Graph:
    """Read every commit reachable from `heads` once (one history walk); without `heads`, from
    the snapshot's main and its unmerged branches."""
    graph = Graph()
    for commit in snapshot.walk(heads or [snapshot.main, *snapshot.pending.values()]):
        c = info(commit)
        meta = c.meta
        files = snapshot.changes(commit, c.problem, meta).written if c.problem and c.kind != "merge" else ()
        graph.nodes[c.id] = Node(c.id, c.kind, c.problem, c.author, c.subject, c.parents, tuple(c.informed_by),
                                 getattr(meta, "candidate", ""), getattr(meta, "episode", ""),
                                 getattr(meta, "worker", ""), files, getattr(meta, "reviews", ""),
                                 str(getattr(meta, "verdict", "")))
    return graph


@dataclass(frozen=True)
class Compounding:
    """A problem's compounding figures (see the module docstring for the definitions)."""

    contributions: int
    built_on: int
    in_ancestry: int

    @property
    def built_on_share(self) -> float | None:
        return self.built_on / self.contributions if self.contributions else None

    @property
    def ancestry_share(self) -> float | None:
        return self.in_ancestry / self.contributions if self.contributions else None


def built_on(graph: Graph, problem: str) -> set[str]:
    """The contributions of `problem` that another contribution cited or inherited."""
    mine = {n.id: n for n in graph.contributions(problem)}
    used: set[str] = set()
    starts: dict[str, set[str]] = {}
    for node in mine.values():
        used |= set(node.cited) & (mine.keys() - {node.id})
        if node.parents:
            start = node.parents[0]
            if start not in starts:
                starts[start] = graph.closure(start, citations=False) & mine.keys()
            used |= starts[start] - {node.id}
    return used


def compounding(graph: Graph, problem: str, candidate: str | None) -> Compounding:
    """The built-on and ancestry figures of one problem."""
    mine = {n.id for n in graph.contributions(problem)}
    ancestry = graph.closure(candidate) & mine if candidate else set()
    return Compounding(len(mine), len(built_on(graph, problem)), len(ancestry))
