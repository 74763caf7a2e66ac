"""The budget ledger: running totals, group commits, and runs written by older versions."""

from __future__ import annotations

import json
import resource
import signal
import threading
from contextlib import contextmanager
from dataclasses import asdict

import anyio
import pygit2
import pytest
from conftest import git

from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.ledger import Ledger
from gitswarm.memory.ledgerbook import BOOK
from gitswarm.memory.store import Store
from gitswarm.usage import Usage


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
    ledger, store = Ledger(), Store(memory)
    records = [EpisodeRecord(f"e{i:05d}", "w01", "p") for i in range(1, 11)]
    before = git(memory.path, "rev-list", "--count", "--all")
    release = threading.Event()

    async def busy() -> None:  # hold the git thread while ten saves queue up behind it
        await store.run(release.wait, 10)  # 10 s at most, should the test fail before it is set

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy)
        await anyio.sleep(0.05)
        for record in records:
            tg.start_soon(ledger.write, store, record)
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


OLD_RECORD = {"episode": "e00001", "worker": "w01", "problem": "p", "status": "abstain", "commit": None,
              "tokens_in": 120, "tokens_out": 30, "cost_usd": 0.5, "cost_known": True, "calls": 2,
              "started": 1.0, "ended": 2.0, "note": "nothing to add"}
"""A record as a ledger written before the cache, reasoning and failed-call parts were kept."""


def test_a_record_of_the_old_format_loads_with_its_new_parts_zero(memory):
    memory.put_records(BOOK, {"episodes/e000/e00001.json": OLD_RECORD,
                              "scheduler.json": {"next_number": 2, "rng_state": None,
                                                 "totals": {"episodes": 1, "charged": 0, "tokens_in": 120,
                                                            "tokens_out": 30, "cost_usd": 0.5,
                                                            "cost_unknown": 0}}}, "old ledger")
    record = Ledger.load(memory).episodes["e00001"]
    assert (record.cache_read, record.cache_write, record.reasoning, record.failed_calls) == (0, 0, 0, 0)
    assert record.usage == Usage(120, 30, known_cost_usd=0.5, calls=2)
    totals = Ledger.summary(memory)  # the old totals lack the new parts: summed from the records
    assert (totals.tokens, totals.calls, totals.failed_calls, totals.cost) == (150, 2, 0, (0.5, True))


def test_charge_keeps_every_part_of_usage_and_the_totals_see_it_at_once(memory):
    ledger, record = Ledger(), EpisodeRecord("e00001", "w01", "p")
    ledger.changed(record)
    ok = Usage.of_call(1000, 200, 0.01, cache_read=600, cache_write=100, reasoning=150)
    failed = Usage(300, 0, calls=2, failed_calls=2, unpriced_calls=1, estimated_tokens=300)  # cut streams, no price
    ledger.charge(record, ok)
    assert ledger.tokens == 1200  # before any save: a cap sees the call as it happens
    ledger.charge(record, failed)
    assert record.usage == ok + failed
    assert not record.cost_known and record.calls == 3 and record.failed_calls == 2
    ledger.save(memory, record)
    stored = Ledger.load(memory).episodes["e00001"]
    assert stored.usage == ok + failed
    assert Ledger.summary(memory).parts() == {"tokens_in": 1300, "cache_read": 600, "cache_write": 100,
                                              "reasoning": 150, "tokens_out": 200, "calls": 3,
                                              "failed_calls": 2, "estimated_tokens": 300}


def test_a_status_is_the_word_the_ledger_always_wrote_and_an_unknown_one_is_kept():
    from gitswarm.core.status import Status

    record = EpisodeRecord("e00001", "w01", "sum", status=Status.CONTRIBUTE)
    stored = json.loads(json.dumps(asdict(record)))
    assert stored["status"] == "contribute"  # the JSON of every record before the enum
    back = EpisodeRecord.from_dict(stored)
    assert back.status is Status.CONTRIBUTE and Status.CONTRIBUTE.charged and not Status.ABSTAIN.charged
    newer = EpisodeRecord.from_dict({**stored, "status": "paused"})  # a word a newer gitswarm may write
    assert newer.status == "paused" and not isinstance(newer.status, Status)
