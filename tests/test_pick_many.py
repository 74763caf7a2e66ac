"""The scheduler's pick asks for the free workers' tasks on a problem a group at a time
(`tasks.best_task`): the same pick as asking every free worker for its own, each answered by the
walk `next_task` once was (`test_next_task_kept.walked`, the oracle)."""

from __future__ import annotations

import random

import pytest
from test_next_task_kept import walked

from gitswarm.domain.index import CommitFacts, MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import tasks
from gitswarm.engine.swarm import pick


def every_worker(index, open_, busy, free_workers, unmerged, rule, rng, waiting, announced, tight=False):
    """`pick` as it was: every free worker's task on every open problem."""
    recent = {(where, worker) for where, worker, _ in unmerged.values()}
    landing = [where for where, _, _ in unmerged.values()]
    pending = busy + landing
    share = -(-(len(free_workers) + len(busy)) // max(1, len(open_)))
    best = None
    for problem in open_:
        work = sum(index.problems[problem].kinds.values()) + 2 * busy.count(problem)
        tie = rng.random()
        notes = " ".join(a for a in announced.values() if a.startswith(f"{problem}: "))
        for worker in free_workers:
            if (problem, worker) in recent:
                continue
            value = walked(index, problem, worker, rule, notes, pending.count(problem), tight,
                           landing=landing.count(problem), share=share).value
            key = (-value, work, tie)
            if value > 0 and (best is None or key < best[0]):
                best = (key, problem, worker)
    if best is not None and (-best[0][0] > tasks.FILLER or not waiting):
        return best[1], best[2]
    return (open_[0], free_workers[0]) if open_ and free_workers and not waiting else None


def memory_of(seed: int) -> MemoryIndex:
    """Problems with attempts by a few authors, some reviewed or nominated by others."""
    index, rng = MemoryIndex(), random.Random(seed)
    for n in range(80):
        problem, author = f"p{n % 5}", f"a{rng.randrange(6)}"
        commit = f"{n:040x}"
        kind = rng.choice(["attempt", "attempt", "note", "review", "nomination"])
        if kind == "attempt":
            index.add(CommitFacts(commit, problem, kind, author, f"e{n:05d}", (f"attempts/{n}.md",)))
            continue
        target = next((c for c, (p, files) in reversed(index.files_of.items())
                       if p == problem and files and files[0].startswith("attempts/")), "")
        if kind == "review" and target:
            index.add(CommitFacts(commit, problem, kind, author, f"e{n:05d}", (f"reviews/{n}.md",),
                                  reviews=target, verdict=rng.choice(["pass", "gaps", "critical"])))
        elif kind == "nomination" and target:
            index.add(CommitFacts(commit, problem, kind, author, f"e{n:05d}", (), nominates=target))
        else:
            index.add(CommitFacts(commit, problem, "note", author, f"e{n:05d}", (f"notes/{n}.md",)))
    return index


@pytest.mark.parametrize("seed", range(40))
def test_tasks_asked_by_groups_pick_as_every_worker(seed: int):
    index = memory_of(seed)
    authors = [f"a{k}" for k in range(6)]
    random.Random(seed).shuffle(authors)
    strangers = [f"w{n:02d}" for n in range(40, 60)]
    free = [*authors, *strangers] if seed % 2 else [*strangers[:3], *authors, *strangers[3:]]
    open_ = sorted(index.problems)
    unmerged = {"c0ffee": (open_[0], free[-1], "contribute")} if seed % 3 == 0 else {}
    named = [path for _, files in index.files_of.values() for path in files if path.startswith("attempts/")]
    said = random.Random(seed).sample(named, min(len(named), seed % 4))
    announced = {f"x{k}": f"{open_[k % len(open_)]}: reviewing {path}" for k, path in enumerate(said)}
    for rule in (Rule(verify=2, settle_nominations=3), Rule(verify=0, settle_nominations=3), Rule(verify=1)):
        for waiting in (False, True):
            args = (index, open_, [open_[-1]] * (seed % 3), free, unmerged, rule)
            assert (pick(*args, random.Random(seed), waiting, announced)
                    == every_worker(*args, random.Random(seed), waiting, announced))


def test_an_author_first_in_line_does_not_hide_a_reviewer():
    index = MemoryIndex()
    index.add(CommitFacts("a" * 40, "p0", "attempt", "a0", "e00001", ("attempts/x.md",)))
    rule = Rule(verify=2, settle_nominations=3)
    assert pick(index, ["p0"], [], ["a0", "w01", "w02"], {}, rule, random.Random(1), True) == ("p0", "w01")
