"""The contribution graph of a problem and the compounding figures of a run.

Definitions (the report prints them too):

- The *contributions* of a problem are the commits whose record (`commitmeta`) names it
  and whose kind is note, lemma, attempt, review or code (nominations, summaries,
  solutions and merges are not contributions), found on main and on unmerged branches.
- The *citation rate* is the number of contributions that cite another contribution of the
  same problem (their record's `informed_by`) over the number of contributions.
- A contribution c was *built on* when some other contribution of the same problem cites it.
  The *built-on share* (built-upon rate) is the number of contributions built on over the
  number of contributions. Citations alone count: a commit's parent is main as it started,
  which every later contribution inherits whether it read it or not.
- The *ancestry* of the selected candidate (the winner) is the candidate, every contribution
  it cites (repeatedly), and the pass reviews of the candidate, which verified it. The
  *ancestry share* is the number of the problem's contributions in that ancestry over the
  number of its contributions.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gitswarm.domain.kinds import CONTRIBUTION_KINDS, Kind
from gitswarm.memory.read import info
from gitswarm.memory.snapshot import Snapshot

COUNTED_KINDS = CONTRIBUTION_KINDS - {Kind.SUMMARY, Kind.NOMINATION}
"""The kinds the figures count as a problem's contributions: what an episode writes (the
domain's `CONTRIBUTION_KINDS`) but a summary or a nomination (this module's docstring)."""


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
        return [n for n in self.nodes.values() if n.problem == problem and n.kind in COUNTED_KINDS]

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
    citing: int = 0
    """Contributions that cite another contribution of the problem."""

    @property
    def citation_rate(self) -> float | None:
        return self.citing / self.contributions if self.contributions else None

    @property
    def built_on_share(self) -> float | None:
        return self.built_on / self.contributions if self.contributions else None

    @property
    def ancestry_share(self) -> float | None:
        return self.in_ancestry / self.contributions if self.contributions else None


def built_on(graph: Graph, problem: str) -> set[str]:
    """The contributions of `problem` that another contribution of it cites."""
    mine = {n.id: n for n in graph.contributions(problem)}
    return {c for node in mine.values() for c in node.cited if c in mine and c != node.id}


def citing(graph: Graph, problem: str) -> set[str]:
    """The contributions of `problem` that cite another contribution of it."""
    mine = {n.id: n for n in graph.contributions(problem)}
    return {node.id for node in mine.values() if set(node.cited) & (mine.keys() - {node.id})}


def ancestry(graph: Graph, problem: str, candidate: str) -> set[str]:
    """The winner's ancestry among the problem's contributions: `candidate`, what it cites
    (repeatedly), and its pass reviews."""
    mine = {n.id: n for n in graph.contributions(problem)}
    verifying = {n.id for n in mine.values() if n.kind == "review" and n.reviews == candidate and n.verdict == "pass"}
    return (cited_from(graph, candidate) | verifying) & mine.keys()


def cited_from(graph: Graph, start: str) -> set[str]:
    """`start` and the commits its citations reach, citation by citation."""
    seen, todo = {start}, deque([start])
    while todo:
        node = graph.nodes.get(todo.popleft())
        for nxt in node.cited if node is not None else ():
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def compounding(graph: Graph, problem: str, candidate: str | None) -> Compounding:
    """The compounding figures of one problem (the module docstring's definitions)."""
    mine = {n.id for n in graph.contributions(problem)}
    found = ancestry(graph, problem, candidate) if candidate else set()
    return Compounding(len(mine), len(built_on(graph, problem)), len(found), len(citing(graph, problem)))
