"""The engine's index of main, on the session's demo run (real engine, merges of several
branches, summaries and selections on main)."""

from __future__ import annotations

import pygit2
import pytest
from demo_run import demo_run

from gitswarm.domain import selection
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
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


def test_a_step_view_is_taken_once_per_problem_and_tip(tmp_path_factory):
    repo = pygit2.Repository(str(demo_run(tmp_path_factory)))
    chain = first_parents(repo)
    index = MemoryIndex()
    indexing.update(index, repo, chain[-2])
    problem = next(iter(index.problems))
    assert index.viewed(problem) is None
    view = index.pinned(problem)
    assert index.pinned(problem) is view and index.viewed(problem) is view  # every step at this tip: one copy
    before = state(view)["problems"][problem]
    indexing.update(index, repo, chain[-1])
    assert index.viewed(problem) is None  # main moved: the next step takes a new view
    again = index.pinned(problem)
    assert again is not view and again.seen_tip == chain[-1] and view.seen_tip == chain[-2]
    assert state(view)["problems"][problem] == before  # the old view did not change under its readers
    assert again.problems[problem].items == index.problems[problem].items


def test_candidates_and_standings_kept_with_the_items_follow_every_commit(tmp_path_factory):
    """`candidates` and `selection.standings` are kept until the problem's items or votes change:
    followed along main, asked at every tip, they are what a fresh index of that tip gives."""
    repo = pygit2.Repository(str(demo_run(tmp_path_factory)))
    rules = [Rule(), Rule(verify=2, in_row=True), Rule(people_count=True)]
    followed = MemoryIndex()
    for tip in first_parents(repo):
        indexing.update(followed, repo, tip)
        fresh = MemoryIndex()
        indexing.update(fresh, repo, tip)
        for problem in fresh.problems:
            assert list(followed.candidates(problem).items()) == list(fresh.candidates(problem).items())
            assert followed.candidates(problem) is followed.candidates(problem)  # kept, not walked again
            for rule in rules:
                assert selection.standings(followed, problem, rule) == selection.standings(fresh, problem, rule)
    assert any(followed.candidates(p) for p in followed.problems)
    assert any(s.passes or s.critical for p in followed.problems for s in selection.standings(followed, p, Rule()))
