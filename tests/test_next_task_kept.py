"""`tasks.next_task` reads a problem's facts kept with its items (`ProblemIndex.derived`): after
every commit taken in, for every worker, what it was in flight and every rule, it answers as it
did when it walked the problem's candidates at each call (`walked`, its previous form, the oracle)."""

from __future__ import annotations

import random
import re

import pytest

from gitswarm.domain import selection
from gitswarm.domain.index import CommitFacts, MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import tasks
from gitswarm.engine.tasks import ATTEMPT, FILLER, NOMINATE, REVIEW, REVISE, VERIFY, Task


def walked(index, problem, worker, rule, busy="", in_flight=0, tight=False, reviews=True, landing=0, share=1):
    """`next_task` as it was: every candidate and its reviews walked at each call."""
    verify = rule.verify
    candidates = list(index.candidates(problem).items())[::-1]
    found = {s.commit: s for s in selection.standings(index, problem, rule)}
    votes = index.problems[problem]
    matter = selection.nominations_matter(found.values(), rule)
    verified = {s.commit for s in selection.verified_of(found.values(), rule)} if verify else set()
    good = [(p, c) for p, c in candidates if c in verified]
    if good and matter and worker not in votes.nominators:
        path, commit = max(good, key=lambda pc: votes.nominations[pc[1]])
        return Task(NOMINATE, 2.5, path, commit, nominations=votes.nominations[commit])
    mine = {c for _, c in candidates if index.authors.get(c) == worker}
    reviewing = {p: len(re.findall(rf"\b{re.escape(p)}\b", busy)) for p, _ in candidates}
    reviewable = [(p, c) for p, c in candidates
                  if c not in mine and not found[c].critical and reviewing[p] < max(verify - found[c].passes, 1)
                  and (found[c].passes < verify or (not verify and not index.reviews_of(problem, c)))
                  and worker not in votes.reviews.get(c, {})]
    if reviewable and reviews:
        path, commit = max(reviewable, key=lambda pc: found[pc[1]].passes)
        passes = found[commit].passes
        value = 3 + passes / max(verify, 1)
        if verify and in_flight >= verify - passes:
            value = FILLER
        ahead = [p for p, c in candidates if reviewing[p] and not found[c].critical and found[c].passes > passes]
        if ahead:
            value = FILLER
        return Task(VERIFY if passes else REVIEW, value, path, commit, passes)
    for path, commit in candidates if rule.nominations else ():
        critical = [r for r in index.reviews_of(problem, commit) if r.verdict == "critical"]
        answered = commit in index.answered or any(r.commit in index.answered for r in critical)
        if critical and not answered and path not in busy:
            return Task(REVISE, 2, path, commit, review_episode=critical[0].episode,
                        review_commit=critical[0].commit)
    if not candidates:
        wait = landing or tight or not rule.nominations or in_flight >= share
        return Task(ATTEMPT, 2 if not in_flight else FILLER if wait else 1.5)
    alive = [c for _, c in candidates if not found[c].critical and found[c].passes < verify]
    if alive and set(alive) <= mine:
        return Task(ATTEMPT, 0)
    if not rule.nominations and all(found[c].critical for _, c in candidates):
        return Task(ATTEMPT, FILLER if in_flight else 2)
    return Task(ATTEMPT, FILLER)


RULES = [Rule(), Rule(verify=0), Rule(verify=1, in_row=True), Rule(verify=2, nominations=False),
         Rule(verify=2, people_count=True)]
WORKERS = ["a0", "a1", "a2", "a3", "a4"]


def commits(seed: int):
    """A problem's commits in a random order: attempts and codebases (some revising, citing a
    critical review), reviews of any verdict (a person's too), nominations, notes."""
    rng, written = random.Random(seed), []
    for n in range(60):
        author, commit = f"a{rng.randrange(4)}", f"{n:040x}"
        kind = rng.choice(["attempt", "code", "review", "review", "review", "nomination", "note"])
        if kind in ("attempt", "code") or not written:
            path = f"attempts/{n}.md" if kind == "attempt" else f"code/s{n % 3}/main.py"
            written.append(commit)
            yield CommitFacts(commit, "p", "code" if path.startswith("code") else "attempt", author, f"e{n:05d}",
                              (path,), cited=(f"{n - 1:040x}",) if rng.random() < 0.3 else ())
        elif kind == "review":
            yield CommitFacts(commit, "p", kind, author, f"e{n:05d}", (f"reviews/{n}.md",), reviews=rng.choice(written),
                              verdict=rng.choice(["pass", "pass", "gaps", "critical"]),
                              person="ann" if rng.random() < 0.1 else "")
        elif kind == "nomination":
            yield CommitFacts(commit, "p", kind, author, f"e{n:05d}", (), nominates=rng.choice(written))
        else:
            yield CommitFacts(commit, "p", "note", author, f"e{n:05d}", (f"notes/{n}.md",))


@pytest.mark.parametrize("seed", range(6))
def test_next_task_answers_as_the_walk_did_after_every_commit(seed):
    index, rng, asked = MemoryIndex(), random.Random(seed), 0
    for facts in commits(seed):
        index.add(facts)
        paths = list(index.candidates("p"))
        for rule in RULES:
            for worker in WORKERS:
                busy = " ".join(f"p: reviewing {p}" for p in rng.sample(paths, min(len(paths), rng.randrange(3))))
                args = dict(busy=busy, in_flight=rng.randrange(3), tight=rng.random() < 0.2,
                            reviews=rng.random() < 0.8, landing=rng.randrange(2), share=rng.randrange(1, 3))
                assert tasks.next_task(index, "p", worker, rule, **args) == walked(index, "p", worker, rule, **args)
                asked += 1
    assert asked == 60 * len(RULES) * len(WORKERS)


@pytest.mark.parametrize("seed", range(4))
def test_needs_kept_with_the_items_says_what_a_fresh_index_says(seed):
    """`tasks.needs` keeps its case with the problem's items: after every commit, for every rule,
    settled or not, it says what it says over an index that was never asked anything."""
    index, seen = MemoryIndex(), []
    for facts in commits(seed):
        index.add(facts)
        seen.append(facts)
        for rule in RULES:
            for settled in (False, True):
                fresh = MemoryIndex()
                for earlier in seen:
                    fresh.add(earlier)
                assert tasks.needs(index, "p", rule, settled) == tasks.needs(fresh, "p", rule, settled)


@pytest.mark.parametrize("seed", range(4))
def test_the_state_blocks_memory_lines_kept_with_the_items_say_what_a_fresh_index_says(seed):
    """The state block's lines of the problem's items (contributions by kind, nominations, the
    newest candidates' reviews) are kept with the items: after every commit they read as over an
    index that was never asked anything."""
    from gitswarm.engine.context import _memory_lines

    index, seen = MemoryIndex(), []
    for facts in commits(seed):
        index.add(facts)
        seen.append(facts)
        fresh = MemoryIndex()
        for earlier in seen:
            fresh.add(earlier)
        assert _memory_lines(index, "p") == _memory_lines(fresh, "p")
