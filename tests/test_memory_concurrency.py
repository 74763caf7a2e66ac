"""Many writers and racing mergers on one run repository: nothing lost, nothing doubled."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from conftest import fsck_clean, git

from gitswarm.domain.contribution import Contribution
from gitswarm.memory.repo import Memory


def writer(path: Path, worker: int, count: int, errors: list) -> None:
    """One writer with its own repository handle, as a separate process would have."""
    try:
        memory = Memory(path)
        for i in range(count):
            episode = f"e{worker:02d}-{i:03d}"
            memory.contribute(Contribution(
                problem="sum", episode=episode, worker=f"w{worker:02d}", kind="note",
                title=f"note {i}", files={f"notes/{episode}.md": f"{worker} {i}\n"},
                parent=memory.main(), op=f"{episode}-c"))
    except Exception as exc:  # reported by the test, not swallowed
        errors.append(exc)


def merger(path: Path, stop: threading.Event, errors: list) -> None:
    try:
        memory = Memory(path)
        while not stop.is_set():
            memory.compose()
        memory.compose()
    except Exception as exc:
        errors.append(exc)


def ops_on_main(path: Path) -> Counter:
    ops = git(path, "log", "main", "--format=%(trailers:key=Gitswarm-Op,valueonly)")
    return Counter(op for op in ops.split() if not op.startswith("merge-"))


def run_swarm(path: Path, writers: int, per_writer: int, mergers: int) -> list:
    errors: list = []
    stop = threading.Event()
    merge_threads = [threading.Thread(target=merger, args=(path, stop, errors)) for _ in range(mergers)]
    write_threads = [threading.Thread(target=writer, args=(path, w, per_writer, errors))
                     for w in range(writers)]
    for t in merge_threads + write_threads:
        t.start()
    for t in write_threads:
        t.join(timeout=300)
    stop.set()
    for t in merge_threads:
        t.join(timeout=300)
    Memory(path).compose()
    return errors


@pytest.mark.slow
def test_64_writers_and_a_merger_lose_and_double_nothing(memory: Memory):
    errors = run_swarm(memory.path, writers=64, per_writer=50, mergers=1)
    assert errors == []
    ops = ops_on_main(memory.path)
    assert len(ops) == 64 * 50 and set(ops.values()) == {1}
    assert memory.pending() == {}
    assert len(memory.items("sum", "note")) == 64 * 50
    assert fsck_clean(memory.path)


def test_two_racing_mergers_lose_no_update(memory: Memory):
    errors = run_swarm(memory.path, writers=8, per_writer=15, mergers=2)
    assert errors == []
    ops = ops_on_main(memory.path)
    assert len(ops) == 8 * 15 and set(ops.values()) == {1}
    merges = git(memory.path, "log", "main", "--merges", "--format=%H %P").splitlines()
    merged_parents = sum(len(line.split()) - 2 for line in merges)  # minus self and old main
    assert merged_parents == 8 * 15  # every branch entered main through exactly one merge
    first_parents = git(memory.path, "rev-list", "--first-parent", "main").split()
    assert len(first_parents) == len(merges) + 1  # main only moved forward, merge by merge
    assert fsck_clean(memory.path)
