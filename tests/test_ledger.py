"""The budget ledger: running totals, group commits, and runs written by older versions."""

from __future__ import annotations

import resource
import signal
from contextlib import contextmanager

import anyio
import pygit2
import pytest
from conftest import git

from gitswarm.engine.gitio import GitThread
from gitswarm.engine.ledger import BOOK, EpisodeRecord, Ledger


@pytest.fixture
def anyio_backend():
    return "asyncio"


def test_totals_of_a_run_written_before_they_were_kept_are_summed(memory):
    old = {f"episodes/e000/e0000{i}.json": vars(EpisodeRecord(f"e0000{i}", "w01", "p", "contribute",
                                                              tokens_in=10 * i, tokens_out=i))
           for i in range(1, 4)}
    memory.put_records(BOOK, {**old, "scheduler.json": {"next_number": 4, "rng_state": None}}, "old ledger")
    totals = Ledger.summary(memory)
    assert (totals.episodes, totals.charged, totals.tokens, totals.cost) == (3, 3, 66, (0.0, True))
    ledger = Ledger.load(memory)
    record = ledger.episodes["e00002"]
    record.status = "abstain"  # records are changed in place, then saved: counted once, not twice
    ledger.save(memory, record)
    ledger.save(memory, record)
    assert Ledger.summary(memory).charged == 2 and Ledger.summary(memory).tokens == 66


@pytest.mark.anyio
async def test_saves_queued_behind_a_busy_git_thread_land_in_one_commit(memory):
    ledger, git_thread = Ledger(), GitThread()
    records = [EpisodeRecord(f"e{i:05d}", "w01", "p") for i in range(1, 11)]
    before = git(memory.path, "rev-list", "--count", "--all")
    release = anyio.Event()

    async def busy() -> None:  # hold the git thread while ten saves queue up behind it
        await git_thread(lambda: anyio.from_thread.run(release.wait))

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy)
        await anyio.sleep(0.05)
        for record in records:
            tg.start_soon(ledger.write, git_thread, memory, record)
        await anyio.sleep(0.05)
        release.set()
    written = int(git(memory.path, "rev-list", "--count", "--all")) - int(before)
    assert written == 1, "the first flush writes every queued record; the rest find nothing to do"
    assert sorted(Ledger.load(memory).episodes) == [r.episode for r in records]
    assert Ledger.summary(memory).episodes == 10


def test_a_failed_flush_keeps_its_records_for_the_next(memory):
    ledger = Ledger()
    ledger.changed(EpisodeRecord("e00001", "w01", "p"))
    with file_size_limit(16):  # a full disk: every object write fails
        with pytest.raises((OSError, pygit2.GitError)):
            ledger.flush(memory)
    ledger.flush(memory)
    assert "e00001" in Ledger.load(memory).episodes


@contextmanager
def file_size_limit(size: int):
    """Writes past `size` bytes fail with EFBIG (SIGXFSZ ignored) until the block ends."""
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, old_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
