"""Every ref of a run moves through `Memory`: a compare-and-swap under its lock and retry.

The meta and stop refs a coordinator publishes used to be set by force: a writer holding the
ref's lock made them fail at once, and two writers could each set a commit that is not a
child of the other's (a lost update). Now they wait for the lock and build on the last tip.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pygit2
import pytest

import gitswarm
from gitswarm.core.stops import Stop, StopReason
from gitswarm.memory.repo import META_REF, Memory
from gitswarm.remote import publish

SETTINGS = {"protocol": publish.PROTOCOL, "solve": {"budget": 3}, "problems": {}}


def tip(memory: Memory, ref: str) -> pygit2.Commit:
    return memory.repo[memory.repo.references[ref].target].peel(pygit2.Commit)


def first_parents(memory: Memory, ref: str) -> list[pygit2.Commit]:
    walker = memory.repo.walk(memory.repo.references[ref].target)
    walker.simplify_first_parent()
    return list(walker)


def test_settings_move_meta_to_a_child_and_only_when_changed(memory: Memory):
    before = tip(memory, META_REF)
    assert publish.write_settings(memory, SETTINGS)
    after = tip(memory, META_REF)
    assert after.parent_ids == [before.id]
    assert after.tree["run.json"].id == before.tree["run.json"].id
    assert publish.read_settings(memory.reader()) == SETTINGS
    assert not publish.write_settings(memory, SETTINGS)
    assert tip(memory, META_REF).id == after.id


def test_the_stop_moves_forward_set_and_cleared(memory: Memory):
    stop = Stop(StopReason.BUDGET, "budget spent")
    publish.write_stop(memory, None)  # nothing to clear: no ref is made
    assert memory.repo.references.get(publish.STOP_REF) is None
    publish.write_stop(memory, stop)
    first = tip(memory, publish.STOP_REF)
    publish.write_stop(memory, stop)
    assert tip(memory, publish.STOP_REF).id == first.id
    assert publish.read_stop(memory.reader()) == stop
    publish.write_stop(memory, None)
    cleared = tip(memory, publish.STOP_REF)
    assert cleared.parent_ids == [first.id]
    assert publish.read_stop(memory.reader()) is None
    publish.write_stop(memory, None)
    assert tip(memory, publish.STOP_REF).id == cleared.id


@pytest.mark.parametrize("ref", [META_REF, publish.STOP_REF])
def test_a_held_lock_is_waited_for_not_raced(memory: Memory, ref: str):
    publish.write_stop(memory, Stop(StopReason.USER, "interrupted"))  # both refs exist, as loose files
    lock = Path(memory.path, f"{ref}.lock")
    lock.write_text("another writer\n")
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    try:
        if ref == META_REF:
            assert publish.write_settings(memory, SETTINGS)
            assert publish.read_settings(memory.reader()) == SETTINGS
        else:
            publish.write_stop(memory, Stop(StopReason.BUDGET, "budget spent"))
            assert publish.read_stop(memory.reader()) == Stop(StopReason.BUDGET, "budget spent")
    finally:
        release.join()
    assert not lock.exists()


def test_two_writers_of_the_stop_lose_no_update(memory: Memory):
    moved: list[str] = []
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        own = Memory(memory.path)  # another process's view of the same run
        try:
            for i in range(25):
                stop = Stop(StopReason.USER, f"{name} {i}") if i % 2 == 0 else None
                files = {publish.STOP_FILE: None} if stop is None else {
                    publish.STOP_FILE: f'{{"reason": "user", "detail": "{stop.detail}"}}'.encode()}
                new = own.put_files(publish.STOP_BOOK, files, f"{name} {i}")
                if new is not None:
                    moved.append(new)
        except BaseException as exc:  # reported below, with the thread's name
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    chain = first_parents(memory, publish.STOP_REF)
    assert sorted(str(c.id) for c in chain) == sorted(moved)


def test_no_ref_moves_by_force_without_saying_why():
    """`force=True` only where the line or the one above says why (`# force: ...`)."""
    unexplained = []
    for path in Path(gitswarm.__file__).parent.rglob("*.py"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if "force=True" in line and not re.search(r"#\s*force:", line + (lines[n - 1] if n else "")):
                unexplained.append(f"{path.name}:{n + 1}: {line.strip()}")
    assert unexplained == []


def test_adopting_a_pushed_commit_sets_branch_and_op_once(memory: Memory):
    repo = memory.repo
    main = repo[repo.references["refs/heads/main"].target]
    sig = pygit2.Signature("box1-w01", "box1-w01@gitswarm.local")
    pushed = str(repo.create_commit(None, sig, sig, "a worker's contribution\n", main.tree.id, [main.id]))
    branch = Path(memory.path, "refs/heads/swarm/e00007.lock")
    branch.parent.mkdir(parents=True, exist_ok=True)
    branch.write_text("another writer\n")
    release = threading.Timer(0.3, branch.unlink)
    release.start()
    try:
        assert memory.adopt("e00007", "op-7", pushed)
    finally:
        release.join()
    assert memory.pending() == {"e00007": pushed}
    assert memory.op_commit("op-7") == pushed
    assert not memory.adopt("e00007", "op-7", pushed)
