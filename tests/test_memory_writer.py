"""The memory's writes made by a process of their own (`memory/writer.py`) through the store: the
writes land in the run and read back in the engine's process, a writer's error (a refused
contribution too) is raised as its own, a writer killed mid-run costs no write (the store writes
on itself), Ctrl-C leaves the writer to the engine, and the ledger's group commit still returns
each save only once it is written."""

from __future__ import annotations

import os
import signal
from dataclasses import asdict
from pathlib import Path

import anyio
import pygit2
import pytest
from conftest import fsck_clean, git
from demo_run import run_demo
from test_memory import contribution

from gitswarm.demo import audit
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.ledger import Ledger
from gitswarm.memory import ledgerbook
from gitswarm.memory.errors import PathRejected
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import WRITER_FROM, Store
from gitswarm.memory.writer import MemoryWriter, WriterLost


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def _store(memory: Memory) -> Store:
    store = await Store.open(lambda: Memory(memory.path), writer=True)
    assert store.writes_elsewhere
    return store


@pytest.mark.anyio
async def test_the_books_land_in_the_run_written_by_another_process(memory: Memory):
    store = await _store(memory)
    try:
        await store.put_records("grades", {"a.json": {"score": 1}}, "a grade")
        tip = await store.put_files("conversations", {"e1.json": b"{}"}, "conversation of e1")
        await store.add_transcript(memory.main(), "the transcript of the first commit")
        where = await store.put_transcript("e00002", "an episode without a commit")
    finally:
        await store.close()
    assert memory.record("grades", "a.json") == {"score": 1}
    assert tip == git(memory.path, "rev-parse", "refs/gitswarm/conversations").strip()
    assert memory.transcript(memory.main()) == "the transcript of the first commit"
    assert memory.book_text(where) == "an episode without a commit"
    assert not store.writes_elsewhere and store.writer_lost is None


def test_a_writers_error_is_raised_as_its_own_and_the_writer_goes_on(memory: Memory):
    writer = MemoryWriter(memory.path)
    try:
        assert writer.pid != os.getpid()
        with pytest.raises(pygit2.GitError, match="invalid name for a tree entry"):
            writer.call("put_files", "notes", {"../escape": b"x"}, "a path git refuses")
        with pytest.raises(ValueError, match="not a write"):
            writer.call("read_file", "README.md")
        assert writer.call("put_files", "notes", {"kept.md": b"x"}, "a good one") is not None
    finally:
        writer.close()
    assert writer.returncode == 0
    assert memory.book_text("refs/gitswarm/notes:kept.md") == "x"
    with pytest.raises(WriterLost, match="closed"):
        writer.call("put_files", "notes", {"late.md": b"x"}, "after the end")


@pytest.mark.anyio
async def test_a_writer_killed_mid_run_costs_no_write(memory: Memory):
    store = await _store(memory)
    await store.put_records("grades", {"before.json": 1}, "before")
    assert store._writer is not None
    os.kill(store._writer.pid, signal.SIGKILL)
    await store.put_records("grades", {"after.json": 2}, "after the writer died")
    await store.close()
    assert memory.records("grades") == {"before.json": 1, "after.json": 2}
    assert not store.writes_elsewhere
    assert store.writer_lost is not None and "exit status -9" in store.writer_lost


def test_ctrl_c_leaves_the_writer_to_the_engine(memory: Memory):
    writer = MemoryWriter(memory.path)
    try:
        writer.call("put_files", "notes", {"a.md": b"1"}, "started")  # its signal handler is set by now
        os.kill(writer.pid, signal.SIGINT)
        writer.call("put_files", "notes", {"b.md": b"2"}, "after Ctrl-C")
    finally:
        writer.close()
    assert writer.returncode == 0
    assert memory.book_text("refs/gitswarm/notes:b.md") == "2"


@pytest.mark.anyio
async def test_each_ledger_save_returns_once_its_record_is_written(memory: Memory):
    """Many episodes end at once: their saves share commits, and none returns before its record
    is in the book, though the write of another save may have taken it."""
    store, ledger = await _store(memory), Ledger()
    seen: dict[str, object] = {}

    async def save(i: int) -> None:
        record = EpisodeRecord(f"e{i:05d}", "w01", "p", "contribute")
        await ledger.write(store, record)
        seen[record.episode] = await store.run(memory.record, ledgerbook.BOOK, record.path)
        assert seen[record.episode] == asdict(record)

    try:
        async with anyio.create_task_group() as tg:
            for i in range(1, 41):
                tg.start_soon(save, i)
    finally:
        await store.close()
    assert len(seen) == 40
    commits = int(git(memory.path, "rev-list", "--count", f"refs/gitswarm/{ledgerbook.BOOK}"))
    assert commits < 40  # group commit: the saves that queued were written together


def test_a_writer_of_no_run_says_why(tmp_path: Path):
    writer = MemoryWriter(tmp_path)
    try:
        with pytest.raises(WriterLost, match=r"exit status 1: .*NotARun"):
            writer.call("put_files", "notes", {"a.md": b"1"}, "to no run")
    finally:
        writer.close()


@pytest.mark.anyio
async def test_contributions_and_merges_by_the_writer_keep_their_refusals(memory: Memory):
    """A contribution the memory refuses is refused as itself (the model reads its reason), and
    one it takes is merged onto main by the writer, read back here."""
    store = await _store(memory)
    try:
        with pytest.raises(PathRejected) as refused:
            await store.contribute(contribution(memory, "e1", {"../escape.md": "x"}))
        assert refused.value.path and refused.value.reason
        written = await store.contribute(contribution(memory, "e2", {"notes/a.md": "first"}))
        assert (await store.contribute(contribution(memory, "e2", {"notes/a.md": "first"}))).existed
        composed = await store.compose()
        assert composed.merged == ["e2"] and await store.main() == composed.commit
        assert memory.read_file("problems/sum/notes/a.md") == b"first"
        assert memory.op_commit("e2-contribute") == written.commit
    finally:
        await store.close()


def _writers_of(pid: int) -> list[int]:
    """The writer processes `pid` started (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            line = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue  # not a process, or one that ended as it was read
        if parent == pid and b"gitswarm.memory.writer" in line:
            found.append(int(entry.name))
    return found


@pytest.mark.anyio
async def test_a_run_of_many_in_flight_writes_by_its_writer_and_loses_nothing(tmp_path: Path):
    """The demo at `WRITER_FROM` episodes in flight: a writer process works beside the engine
    while it runs and is gone after; every episode's record, conversation and transcript is in
    the run, each charged op written once, and git finds the repository whole."""
    seen: list[list[int]] = []

    def listener(event) -> None:
        if event.kind == "episode_started" and not seen:
            seen.append(_writers_of(os.getpid()))

    run = tmp_path / "run"
    result = await run_demo(run, listeners=[listener], workers=WRITER_FROM, budget=40)
    assert seen and len(seen[0]) == 1 and _writers_of(os.getpid()) == []
    ledger = {path: r for path, r in Memory(run).records(ledgerbook.BOOK, "episodes").items()
              if Path(path).stem != "merger"}  # the merger's charges: no episode of its own
    assert result.charged == audit.charged(run) and audit.duplicated(run) == 0 and fsck_clean(run)
    kept = set(git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/conversations").split())
    assert {f"{Path(p).stem}.json" for p in ledger} <= {Path(p).name for p in kept}
    assert all(r["commit"] or r["transcript"] for r in ledger.values() if r["status"] != "running")
