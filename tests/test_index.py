"""The engine's index of main, on the session's demo run (real engine, merges of several
branches, summaries and selections on main)."""

from __future__ import annotations

import pygit2
import pytest
from demo_run import demo_run

from gitswarm.domain import selection
from gitswarm.domain.index import CommitFacts, MemoryIndex
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
            "candidate_paths": index.candidate_paths, "answered": index.answered, "taken": index.taken}


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


def test_candidates_kept_with_the_items_follow_every_commit(tmp_path_factory):
    """`candidates` is kept until the problem's items change: followed along main, asked at every
    tip, it is what a fresh index of that tip gives, and a view taken before a change keeps its own."""
    repo = pygit2.Repository(str(demo_run(tmp_path_factory)))
    followed = MemoryIndex()
    for tip in first_parents(repo):
        indexing.update(followed, repo, tip)
        fresh = MemoryIndex()
        indexing.update(fresh, repo, tip)
        for problem in fresh.problems:
            assert followed.candidates(problem) == fresh.candidates(problem)
            assert list(followed.candidates(problem)) == list(fresh.candidates(problem))
            assert followed.candidates(problem) is followed.candidates(problem)  # kept, not walked again
    assert any(followed.candidates(p) for p in followed.problems)


@pytest.mark.parametrize("rule", [Rule(verify=2, settle_nominations=2), Rule(1, 3, in_row=True, people_count=True)],
                         ids=["default", "in-row-people"])
def test_standings_kept_with_the_items_follow_every_commit(tmp_path_factory, rule):
    """The selection's standings are kept with a problem's items (the scheduler asks for every open
    problem's at each pick): followed along main, at every tip they are a fresh index's, under each
    rule kept apart, and a view pinned before a change keeps its own."""
    repo = pygit2.Repository(str(demo_run(tmp_path_factory)))
    followed, views = MemoryIndex(), []
    for tip in first_parents(repo):
        indexing.update(followed, repo, tip)
        fresh = MemoryIndex()
        indexing.update(fresh, repo, tip)
        for problem in fresh.problems:
            assert selection.standings(followed, problem, rule) == selection.standings(fresh, problem, rule)
            assert selection.standings(followed, problem, rule) is selection.standings(followed, problem, rule)
            views.append((followed.pinned(problem), problem, selection.standings(fresh, problem, rule)))
    for view, problem, then in views:  # each view still stands as its tip did
        assert selection.standings(view, problem, rule) == then
    assert any(selection.standings(followed, p, rule) for p in followed.problems)


def test_resolve_names_a_candidate_by_path_or_commit_as_it_stood():
    """A review or nomination names what it means by path or by (a prefix of) a commit: the
    candidate as it stands, an earlier version of it by that version's commit, never another
    problem's."""
    index = MemoryIndex()
    old, new, other, note = "a1" + "0" * 38, "b2" + "0" * 38, "c3" + "0" * 38, "d4" + "0" * 38
    index.add(CommitFacts(old, "p", "attempt", "w1", "e00001", ("attempts/x.md",)))
    index.add(CommitFacts(note, "p", "note", "w1", "e00002", ("notes/n.md",)))
    index.add(CommitFacts(other, "q", "attempt", "w2", "e00003", ("attempts/y.md",)))
    index.add(CommitFacts(new, "p", "attempt", "w3", "e00004", ("attempts/x.md",)))
    assert index.resolve("p", "attempts/x.md") == (new, "attempts/x.md")
    assert index.resolve("p", "problems/p/attempts/x.md") == (new, "attempts/x.md")
    assert index.resolve("p", new) == index.resolve("p", new[:12].upper()) == (new, "attempts/x.md")
    assert index.resolve("p", old[:9]) == (old, "attempts/x.md")  # the earlier version, by its own commit
    assert index.resolve("p", other) is None and index.resolve("q", other[:7]) == (other, "attempts/y.md")
    assert index.resolve("p", note) is None  # a note is no candidate
    assert index.resolve("p", new[:6]) is None  # too short to be a commit's name
