"""The memory as an async store (`memory/store.py`) on a real repository: its writes, one call at
a time on its git thread, a started write finished when its caller is cancelled, no pygit2
type in what it offers, and no git thread held outside the memory."""

from __future__ import annotations

import ast
import inspect
import threading
import time
from pathlib import Path

import anyio
import pytest
from conftest import git
from test_memory import contribution

import gitswarm
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_a_contribution_composed_onto_main_through_the_store(memory: Memory):
    store = Store(memory)
    start = await store.main()
    written = await store.contribute(contribution(memory, "e1", {"notes/a.md": "first"}))
    again = await store.contribute(contribution(memory, "e1", {"notes/a.md": "first"}))
    assert again.existed and again.commit == written.commit
    assert (await store.commit(written.commit)).parents == (start,)
    composed = await store.compose()
    assert composed.merged == ["e1"] and await store.main() == composed.commit
    assert await store.read_file("problems/sum/notes/a.md") == b"first"
    assert await store.root() == start and await store.op_commit("e1-contribute") == written.commit
    snapshot = await store.snapshot()
    assert snapshot.main == composed.commit


@pytest.mark.anyio
async def test_calls_run_one_at_a_time_on_one_thread(memory: Memory):
    store, inside, most, threads = Store(memory), [0], [0], set()

    def work() -> None:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        threads.add(threading.get_ident())
        time.sleep(0.02)
        inside[0] -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(store.run, work)
    assert most[0] == 1 and threading.get_ident() not in threads


@pytest.mark.anyio
async def test_a_started_write_finishes_when_its_caller_is_cancelled(memory: Memory):
    store, began = Store(memory), threading.Event()

    def slow_write() -> str:
        began.set()
        time.sleep(0.3)
        return memory.contribute(contribution(memory, "e1", {"notes/a.md": "kept"})).commit

    with anyio.move_on_after(0.05) as scope:
        await store.run(slow_write)
        await anyio.sleep(1)  # the cancellation lands here, once the write is done
    assert scope.cancel_called and began.is_set()
    assert git(memory.path, "rev-parse", "refs/heads/swarm/e1").strip() == memory.op_commit("e1-contribute")


@pytest.mark.anyio
async def test_a_call_still_queued_when_its_caller_is_cancelled_is_not_made(memory: Memory):
    """A stop does not wait for the reads queued behind a long one: only a started call is
    waited for."""
    store, release, made = Store(memory), threading.Event(), []
    async with anyio.create_task_group() as tg:
        tg.start_soon(store.run, release.wait, 10)  # the git thread held
        await anyio.sleep(0.05)
        with anyio.move_on_after(0.05) as scope:
            await store.run(made.append, "queued")
        release.set()
    assert scope.cancel_called and made == []
    assert await store.run(made.append, "after") is None and made == ["after"]


def test_no_pygit2_type_in_what_the_store_offers():
    for name, member in inspect.getmembers(Store, callable):
        if name.startswith("_") and name != "__init__":
            continue
        annotations = " ".join(str(a) for a in inspect.get_annotations(member).values())
        assert "pygit2" not in annotations and "Repository" not in annotations, name


def test_nothing_outside_the_memory_holds_a_git_thread():
    """One git thread a process: the store's. Read from each module's syntax tree."""
    package = Path(gitswarm.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if package / "memory" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name == "GitThread" for a in node.names):
                found.append(str(path.relative_to(package)))
    assert found == []
