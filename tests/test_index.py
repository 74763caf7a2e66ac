"""The engine's index of main, on the session's demo run (real engine, merges of several
branches, summaries and selections on main)."""

from __future__ import annotations

import pygit2
import pytest
from demo_run import demo_run

from gitswarm.domain.index import MemoryIndex
from gitswarm.memory import indexing


def first_parents(repo: pygit2.Repository) -> list[str]:
    """Main's tips as the run moved it, oldest first."""
    chain, commit = [], repo[repo.references["refs/heads/main"].target]
    while True:
        chain.append(str(commit.id))
        if not commit.parent_ids:
            return chain[::-1]
        commit = repo[commit.parent_ids[0]]


def state(index: MemoryIndex) -> dict:
    problems = {p: (list(i.items.items()), i.kinds, i.nominations, i.nominators,
                    {c: list(r.items()) for c, r in i.reviews.items()})
                for p, i in index.problems.items()}
    return {"problems": problems, "cited": index.cited, "files_of": index.files_of, "authors": index.authors,
            "answered": index.answered, "taken": index.taken}


@pytest.mark.parametrize("stride", [1, 3])
def test_following_main_step_by_step_gives_the_index_one_walk_gives(tmp_path_factory, stride: int):
    repo = pygit2.Repository(str(demo_run(tmp_path_factory)))
    chain = first_parents(repo)
    assert any(len(repo[c].parent_ids) > 2 for c in chain)  # merges of several branches at once
    followed = MemoryIndex()
    for tip in [*chain[:-1:stride], chain[-1]]:
        indexing.update(followed, repo, tip)
    indexing.update(followed, repo, chain[-1])  # the same tip again takes in nothing
    whole = MemoryIndex()
    indexing.update(whole, repo, chain[-1])
    assert state(followed) == state(whole)
    assert followed.seen_tip == chain[-1] and len(whole.taken) == len(list(repo.walk(repo.head.target)))
