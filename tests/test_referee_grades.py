"""The grades store: one entry per key, compare-and-swap moves, history kept, out of agents' sight."""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import git

from gitswarm.domain.grade import Grade, describe, entry_path, slug
from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.referee.grades import GRADES_REF, GradeStore


def _grade(score: float | None = 1.0, candidate: str = "a" * 40, grader: str = "answer",
           model: str | None = None, problem: str = "sum") -> Grade:
    return Grade(problem, candidate, "problems/sum/attempts/x.md", grader, model, score, 1.0,
                 {"method": "exact"})


def test_put_get_and_idempotence(memory: Memory):
    store = GradeStore(memory)
    assert store.get("sum", "a" * 40, "answer", None) is None and store.for_problem("sum") == []
    stored, written = store.put(_grade(1.0))
    assert written and stored.time > 0
    again, written = store.put(_grade(0.0))
    assert not written and again.score == 1.0  # the first entry of a key stays
    assert store.get("sum", "a" * 40, "answer", None).score == 1.0
    replaced, written = store.put(_grade(0.0), replace=True)
    assert written and store.get("sum", "a" * 40, "answer", None).score == 0.0
    history = store.history(replaced.key)
    assert [g.score for g in history] == [0.0, 1.0]
    assert len(git(memory.path, "rev-list", GRADES_REF).split()) == 2


def test_keys_readers_and_scores(memory: Memory):
    store = GradeStore(memory)
    store.put(_grade(1.0, candidate="a" * 40))
    store.put(_grade(None, candidate="b" * 40))
    store.put(_grade(6.0, candidate="b" * 40, grader="proof-judge", model="openai/gpt-4o"))
    store.put(_grade(0.0, candidate="c" * 40, problem="odd"))
    assert entry_path("sum", "b" * 40, "proof-judge", "openai/gpt-4o") == \
        f"grades/sum/{'b' * 40}/proof-judge--openai-gpt-4o.json"
    assert slug(None) == "none" and slug("ollama/llama3:8b") == "ollama-llama3-8b"
    assert len(store.for_problem("sum")) == 3 and len(store.for_candidate("sum", "b" * 40)) == 2
    assert store.scores("sum") == {"a" * 40: 1.0, "b" * 40: 6.0}
    assert describe(_grade(None)) == "undecided" and describe(None) == "-"


def test_agents_never_see_grades(memory: Memory):
    GradeStore(memory).put(_grade(1.0))
    reopened = Memory(memory.path)
    assert all("grade" not in i.path for p in reopened.problems() for i in reopened.items(p))
    assert all(c.kind != "grade" for c in reopened.log(include_pending=True))
    assert "grades/" not in git(memory.path, "ls-tree", "-r", "--name-only", "main")


def test_concurrent_writers_lose_nothing(memory: Memory):
    def writer(n: int) -> None:
        store = GradeStore(Memory(memory.path))  # its own repository handle, as another process
        for i in range(10):
            store.put(_grade(1.0, candidate=f"{n}{i}".ljust(40, "0")))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(GradeStore(memory).for_problem("sum")) == 30
    assert len(git(memory.path, "rev-list", GRADES_REF).split()) == 30


def test_a_held_lock_is_waited_for_and_the_commit_carries_a_grade_record(memory: Memory):
    """The grades ref moves through `Memory.put_files` (its lock and retry): a writer holding
    `refs/gitswarm/grades.lock` is waited for, and the first entry of a key still wins."""
    store = GradeStore(memory)
    store.put(_grade(1.0, candidate="b" * 40))  # the ref exists, as a loose file
    lock = Path(memory.path, f"{GRADES_REF}.lock")
    lock.write_text("another writer\n")
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    try:
        stored, written = store.put(_grade(0.5, model="openai/gpt-4o"))
    finally:
        release.join()
    assert written and store.get("sum", "a" * 40, "answer", "openai/gpt-4o") == stored
    assert store.put(_grade(0.0, model="openai/gpt-4o")) == (stored, False)
    record = memory.commit(GRADES_REF).meta
    assert record == commitmeta.GradeRecord(run=memory.run_id, problem="sum", candidate="a" * 40, grader="answer",
                                      model="openai/gpt-4o")
    subject = git(memory.path, "log", "-1", "--format=%s", GRADES_REF).strip()
    assert subject == f"grade(sum): answer 0.5/1 for {'a' * 12}"
