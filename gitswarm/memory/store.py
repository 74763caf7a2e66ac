"""`Store`: the run's memory for the event loop. It owns the `Memory` and the process's one git
thread, and every git call the engine and the remote make goes through it: a typed method for
each write of the memory (each ref move a compare-and-swap, `memory/retry.py`) and the reads
the engine makes often, `run` for compound work that reads the memory (and the index) on the
git thread, `reader` and `snapshot` for readers. No pygit2 type is in its signatures.

All git work of the process goes through one thread: pygit2 holds the GIL while it works, so
more writer threads would only queue, and the event loop must never wait on git. A store opened
with a writer (`open(..., writer=True)`) hands its typed writes (contributions, merges, commits
onto main, the books) to a process of their own instead (`memory/writer.py`), off this
process's core; reads and `run`'s compound work stay on the git thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio

from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.memory import compose as composer
from gitswarm.memory import indexfile, indexing
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.model import CommitInfo, Written
from gitswarm.memory.repo import MainRecord, Memory
from gitswarm.memory.snapshot import Snapshot
from gitswarm.memory.writer import MemoryWriter, WriterLost

T = TypeVar("T")
KEEP_EVERY = 15.0
"""Seconds at least between two writes of the engine's index beside the run (its readers take
in the commits since from git, 35 us each)."""
KEEP_SHARE = 0.01
"""At most this share of the git thread's time goes to writing the index: a write takes time in
proportion to the run's size (0.35 s at 100,000 commits), so the next waits the longer of
`KEEP_EVERY` and the last write's time divided by this."""
WRITER_FROM = 32
"""A run of this many episodes in flight or more makes its writes by a writer process
(`memory/writer.py`): below it the engine's process is far from filling its core (at C = 16
its CPU per model call is that of the model calls alone), and the process costs its start
(a fifth of a second of CPU) and its memory (about 40 MB)."""


class GitThread:
    """Runs memory calls one at a time in a thread of its own. A call that has started always
    finishes, and its caller waits for it even when cancelled, so a stop never leaves a
    half-done write; a call cancelled before it started is not made.

    One thread kept for the store's life, with a queue: the calls of a busy run are made there
    back to back, the thread never sleeping between them. anyio's `to_thread` with a limiter of
    one handed a worker thread each call alone, waking it each time: 140 us of the process's
    CPU per call with 64 calls waiting, against 40 here (`scripts/bench_gitthread.py`), two to
    three calls per model call at a few hundred episodes in flight."""

    def __init__(self, name: str = "gitswarm-git") -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)

    async def __call__(self, fn: Callable[..., T], *args: object) -> T:
        made = self._pool.submit(contextvars.copy_context().run, fn, *args)  # its context, as to_thread's
        try:
            return await asyncio.wrap_future(made)
        except anyio.get_cancelled_exc_class():
            if made.cancel():  # not started: not made
                raise
            with anyio.CancelScope(shield=True):  # under way: waited for
                await asyncio.wrap_future(made)
            raise

    def close(self) -> None:
        """Let the thread end once the calls given to it are made."""
        self._pool.shutdown(wait=False)


class Store:
    """The run's memory, awaited: each call runs on the store's git thread, one at a time, and
    a call that has started finishes even when its caller is cancelled."""

    def __init__(self, memory: Memory, thread: GitThread | None = None, writer: MemoryWriter | None = None) -> None:
        self.memory = memory
        """The memory itself, for work that already runs on the git thread (`run`'s functions)."""
        self._thread = thread or GitThread()
        self._kept_at = time.monotonic()
        self._keep_every = KEEP_EVERY
        self._writer = writer
        self._writing = GitThread("gitswarm-writer")
        """The thread that waits on the writer process's pipe, one write at a time."""
        self.writer_lost: str | None = None
        """Why the writer process ended before the store closed it; its writes and all after it
        were made on the git thread."""

    @classmethod
    async def open(cls, opener: Callable[[], Memory], *, writer: bool = False) -> Store:
        """The store of the memory `opener` opens (or creates), opened on a new git thread;
        `writer`: the writes made by a writer process (`close` ends it)."""
        thread = GitThread()
        memory = await thread(opener)
        started = await anyio.to_thread.run_sync(MemoryWriter, memory.path, memory.limits) if writer else None
        return cls(memory, thread, started)

    async def close(self) -> None:
        """End the writer process, once its write in hand is made."""
        writer, self._writer = self._writer, None
        if writer is not None:
            await self._writing(writer.close)
        self._writing.close()

    @property
    def writes_elsewhere(self) -> bool:
        """The writes are made by a writer process (until it is lost)."""
        return self._writer is not None

    async def _write(self, method: Callable[..., T], *args: object) -> T:
        """`method(*args)`, a write of `self.memory`: by the writer process when there is one,
        else on the git thread. A writer that is lost is closed, and its write and every one
        after it made here (each write is idempotent)."""
        writer = self._writer
        if writer is not None:
            try:
                made: T = await self._writing(writer.call, method.__name__, *args)
                return made
            except WriterLost as lost:
                self.writer_lost = str(lost)
                if self._writer is writer:
                    self._writer = None
                    await anyio.to_thread.run_sync(writer.close)
        return await self.run(method, *args)

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` on the git thread: compound work that reads the memory (and the index)."""
        return await self._thread(fn, *args)

    @property
    def run_id(self) -> str:
        return self.memory.run_id

    # -- writes ---------------------------------------------------------------------------

    async def contribute(self, contribution: Contribution) -> Written:
        """An episode's commit on `swarm/<episode>` (`Memory.contribute`)."""
        return await self._write(self.memory.contribute, contribution)

    async def adopt(self, episode: str, op: str, commit: str) -> bool:
        """A remote worker's checked commit put on `swarm/<episode>` (`Memory.adopt`)."""
        return await self._write(self.memory.adopt, episode, op, commit)

    async def compose(self, episodes: list[str] | None = None,
                      resolutions: Sequence[composer.Resolution] = ()) -> composer.Composed:
        """Pending branches merged onto main (`Memory.compose`)."""
        return await self._write(self.memory.compose, episodes, resolutions)

    async def commit_to_main(self, files: dict[str, bytes], subject: str, record: MainRecord) -> Written:
        """A system write straight onto main (`Memory.commit_to_main`)."""
        return await self._write(self.memory.commit_to_main, files, subject, record)

    async def put_records(self, book: str, records: dict[str, object], message: str) -> None:
        """Records written to the book `refs/gitswarm/<book>` (`Memory.put_records`)."""
        await self._write(self.memory.put_records, book, records, message)

    async def put_files(self, book: str, files: dict[str, bytes | None], message: str) -> str | None:
        """Files written to (or removed from) the book `refs/gitswarm/<book>` (`Memory.put_files`)."""
        return await self._write(self.memory.put_files, book, files, message)

    async def add_transcripts(self, transcripts: dict[str, str]) -> None:
        """Transcripts attached to their commits as notes (`Memory.add_transcripts`)."""
        await self._write(self.memory.add_transcripts, transcripts)

    async def add_transcript(self, commit: str, text: str) -> None:
        await self.add_transcripts({commit: text})

    async def put_transcript(self, episode: str, text: str) -> str:
        """The transcript of an episode without a commit, kept in its book; where, for `git show`."""
        return await self._write(self.memory.put_transcript, episode, text)

    async def pack_refs(self) -> bool:
        return await self.run(self.memory.pack_refs)

    # -- reads ----------------------------------------------------------------------------

    async def update_index(self, index: MemoryIndex, tip: str) -> None:
        """`index` brought up to main's commit `tip` (`memory.indexing.update`), and written
        beside the run for its readers every `KEEP_EVERY` seconds or more (`KEEP_SHARE`;
        `memory.indexfile`)."""
        await self.run(self._update_index, index, tip)

    async def kept_index(self, tip: str) -> MemoryIndex:
        """The index of main up to `tip` from the file beside the run, else built from git
        (`memory.indexfile.kept`): a run that resumes does not walk its history again."""
        return await self.run(indexfile.kept, self.memory.repo, tip)

    async def keep_index(self, index: MemoryIndex, tip: str | None = None) -> None:
        """Write `index` beside the run now (the run's end), first brought to main's commit
        `tip` when given (the solutions selection wrote: each reader would take them in again)."""
        await self.run(self._keep_at, index, tip)

    def _keep_at(self, index: MemoryIndex, tip: str | None) -> None:
        if tip is not None:
            indexing.update(index, self.memory.repo, tip)
        self._keep(index)

    def _update_index(self, index: MemoryIndex, tip: str) -> None:
        indexing.update(index, self.memory.repo, tip)
        if time.monotonic() - self._kept_at >= self._keep_every:
            self._keep(index)

    def _keep(self, index: MemoryIndex) -> None:
        started = time.monotonic()
        indexfile.save(index, self.memory.repo)
        self._kept_at = time.monotonic()
        self._keep_every = max(KEEP_EVERY, (self._kept_at - started) / KEEP_SHARE)

    async def main(self) -> str:
        """Main's tip now."""
        return await self.run(self.memory.main)

    async def root(self) -> str:
        """The run's first commit on main."""
        return await self.run(self.memory.root)

    async def op_commit(self, op: str) -> str | None:
        """The commit op `op` wrote, or None."""
        return await self.run(self.memory.op_commit, op)

    async def commit(self, rev: str) -> CommitInfo:
        return await self.run(self.memory.commit, rev)

    async def read_file(self, path: str, at: str | None = None) -> bytes | None:
        return await self.run(self.memory.read_file, path, at)

    async def blob_ids(self, paths: list[str], at: str) -> dict[str, str | None]:
        return await self.run(self.memory.blob_ids, paths, at)

    async def snapshot(self) -> Snapshot:
        """A read-only view pinned at main's tip and the pending branches now (`Memory.snapshot`)."""
        return await self.run(self.memory.snapshot)

    def reader(self) -> GitReader:
        """The run's refs, files and books as they are when read (`Memory.reader`); its reads
        belong on the git thread (`run`)."""
        return self.memory.reader()
