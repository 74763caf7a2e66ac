"""Which problem the scheduler starts an episode on next, and which free worker runs it.

Pure functions of the index and of what is busy: the scheduler (`swarm.Scheduler`) gathers
its episodes in flight, its claims in the making and its finished episodes not yet merged,
and passes them in; the random tie-break is its seeded generator, so a resumed run picks
as the run before it would have.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping

from gitswarm.engine import selection
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.index import MemoryIndex

Unmerged = Mapping[str, tuple[str, str, str]]
"""Commit -> (problem, worker, status) of finished episodes the index does not hold yet."""


def open_problems(index: MemoryIndex, problems: list[str], settled: Collection[str], aside: Collection[str],
                  busy: list[str], cfg: SolveConfig) -> list[str]:
    """Problems an episode may start on: not settled, not set aside, and not covered (a
    verified leader with enough nominations, made or in the making, to settle it: more
    episodes would only vote). `busy` holds one problem per nomination in the making."""

    def covered(p: str) -> bool:
        top = selection.leader(index, p, cfg.verify)
        return (top is not None and top.verified
                and top.nominations + busy.count(p) >= cfg.settle_nominations)

    return [p for p in problems if p not in settled and p not in aside and not covered(p)]


def worker_for(index: MemoryIndex, problem: str, verify: int, free_workers: list[str],
               unmerged: Unmerged) -> str | None:
    """The first free worker whose review of `problem`'s candidates still short of
    verification would count: not their author (an author's review of its own attempt
    does not count), not a worker that reviewed them already, nor the author of work
    not yet merged there. With no such candidate, the first free worker; None when no
    free worker would count."""
    short = [s.commit for s in selection.standings(index, problem) if not s.critical and s.passes < verify]
    recent = {worker for where, worker, _ in unmerged.values() if where == problem}
    if not short:
        return next((w for w in free_workers if w not in recent), None)
    done = {c: {index.authors.get(c), *index.problems[problem].reviews.get(c, {})} for c in short}
    return next((w for w in free_workers if w not in recent and any(w not in d for d in done.values())),
                None)


def pick(index: MemoryIndex, open_: list[str], busy: list[str], free_workers: list[str], unmerged: Unmerged,
         verify: int, rng: random.Random, waiting: bool) -> tuple[str, str] | None:
    """A problem of `open_` and a free worker: unsolved problems first, then the least worked
    (contributions, and 2 for each episode `busy` on it), then `rng`, each given to a worker
    whose review of its candidates would count (`worker_for`). When no such pair exists and
    nothing is in flight or being claimed (not `waiting`, so nothing will change by
    waiting), the first problem goes to the first free worker."""
    open_ = sorted(open_, key=lambda p: (bool(index.problems[p].nominations),
                                         sum(index.problems[p].kinds.values()) + 2 * busy.count(p),
                                         rng.random()))
    for problem in open_:
        worker = worker_for(index, problem, verify, free_workers, unmerged)
        if worker is not None:
            return problem, worker
    return (open_[0], free_workers[0]) if open_ and not waiting else None
