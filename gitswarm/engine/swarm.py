"""The scheduler: keeps C episodes in flight until the budget is spent, every problem is
settled, a cap is reached or the user stops; then selects each problem's solution."""

from __future__ import annotations

import base64
import random
import struct
import time
from dataclasses import dataclass, field

import anyio

from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import EpisodeInfo
from gitswarm.engine.episode import CapReached, Shared, run_episode
from gitswarm.engine.ledger import EpisodeRecord, Ledger
from gitswarm.engine.merger import Merger
from gitswarm.problems.model import ProblemSet

FATAL_KINDS = ("auth", "permission", "not_found", "bad_request", "context_window", "quota")


@dataclass
class Control:
    """How the outside (CLI, dashboard) steers a run: a graceful stop and a pause."""

    stop: anyio.Event = field(default_factory=anyio.Event)
    paused: bool = False


@dataclass
class Scheduler:
    """Starts episodes; one instance per `solve`."""

    shared: Shared
    ledger: Ledger
    merger: Merger
    problem_set: ProblemSet
    problems: list[str]
    control: Control
    rng: random.Random
    in_flight: dict[str, EpisodeRecord] = field(default_factory=dict)
    free_workers: list[str] = field(default_factory=list)
    fatal: str | None = None
    cap: str | None = None
    failed_in_row: int = 0
    """Episodes ended by a failed model call since the last one that did not fail."""
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def config(self) -> SolveConfig:
        return self.shared.view.config

    async def loop(self) -> str:
        """Run episodes until a stop condition holds; returns the reason."""
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            await self._resume(tg)
            while (reason := self._stop_reason(started)) is None:
                if not self._may_start():
                    await self._wait()
                    continue
                problem = self._pick()
                if problem is None:
                    if not self.in_flight:
                        reason = "every problem is settled"
                        break
                    await self._wait()
                    continue
                await self._start(tg, self.ledger.new_id(), self.free_workers.pop(0), problem)
            return reason

    def _stop_reason(self, started: float) -> str | None:
        cfg = self.config
        if self.fatal:
            return f"stopped: {self.fatal}"
        if self.failed_in_row >= max(3, cfg.workers):
            return (f"stopped: {self.failed_in_row} episodes in a row failed on model calls (is the "
                    "provider reachable?)")
        if self.control.stop.is_set():
            return "stopped by the user"
        if self.cap:
            return self.cap
        if self.ledger.charged >= cfg.budget:
            return f"budget of {cfg.budget} episodes spent"
        if cfg.time_limit_s is not None and time.monotonic() - started > cfg.time_limit_s:
            return f"time limit of {cfg.time_limit_s:.0f} s reached"
        if set(self.problems) <= self.shared.view.settled:
            return "every problem is settled"
        return None

    def _may_start(self) -> bool:
        reserved = self.ledger.charged + len(self.in_flight)
        return (not self.control.paused and bool(self.free_workers)
                and reserved < self.config.budget)

    async def _wait(self) -> None:
        with anyio.move_on_after(0.5):
            await self._changed.wait()
        self._changed = anyio.Event()

    def _pick(self) -> str | None:
        """Unsolved first, then least worked (contributions and episodes in flight)."""
        index, settled = self.shared.index, self.shared.view.settled
        busy = [r.problem for r in self.in_flight.values()]
        needed = self.config.settle_nominations

        def covered(p: str) -> bool:
            """Nominated, and enough episodes already on it to settle it: more would only vote."""
            top = max(index.problems[p].nominations.values(), default=0)
            return top > 0 and top + busy.count(p) >= needed

        open_ = [p for p in self.problems if p not in settled and not covered(p)]
        if not open_:
            return None
        return min(open_, key=lambda p: (bool(index.problems[p].nominations),
                                         sum(index.problems[p].kinds.values()) + 2 * busy.count(p),
                                         self.rng.random()))

    async def _resume(self, tg) -> None:
        """Finish the records of episodes a crash cut off, and restart the unfinished ones."""
        memory = self.shared.memory
        for record in self.ledger.running():
            done = await self.shared.git(memory.op_commit, f"{record.episode}-final")
            if done is not None:
                info = await self.shared.git(memory.commit, done)
                record.status = "nominate" if info.kind == "nomination" else "contribute"
                record.commit, record.ended = done, time.time()
                record.note = "finished before a crash; recorded on resume"
                await self.ledger.write(self.shared.git, memory, record)
            elif record.worker in self.free_workers and record.problem not in self.shared.view.settled:
                self.free_workers.remove(record.worker)
                await self._start(tg, record.episode, record.worker, record.problem, restarted=True)
            else:
                record.status, record.note = "abstain", "cut off by a crash, not restarted"
                await self.ledger.write(self.shared.git, memory, record)
        self.merger.kick()

    async def _start(self, tg, episode: str, worker: str, problem: str, restarted: bool = False) -> None:
        shared = self.shared
        record = EpisodeRecord(episode, worker, problem)
        self.ledger.rng_state = _json_state(self.rng.getstate())
        await self.ledger.write(shared.git, shared.memory, record)
        self.in_flight[episode] = record
        main = await shared.git(shared.memory.main)
        found = self.problem_set.get(problem)
        info = EpisodeInfo(episode, worker, problem, found.kind.value, found.title, main)
        shared.events.emit("episode_started", episode=episode, worker=worker, problem=problem,
                           restarted=restarted)
        tg.start_soon(self._episode, info, record)

    async def _episode(self, info: EpisodeInfo, record: EpisodeRecord) -> None:
        from gitswarm.models import ModelError

        shared = self.shared
        try:
            record = await run_episode(shared, info, record)
        except CapReached as exc:
            record.status, record.note, self.cap = "abstain", str(exc), str(exc)
        except ModelError as exc:
            record.status, record.note = "failed", str(exc)
            if exc.kind in FATAL_KINDS:
                self.fatal = str(exc)
        record.ended = time.time()
        self.failed_in_row = self.failed_in_row + 1 if record.status == "failed" else 0
        await self.ledger.write(shared.git, shared.memory, record)
        self._report(record)
        del self.in_flight[record.episode]
        self.free_workers.append(record.worker)
        self.free_workers.sort()
        if record.commit:
            self.merger.kick(record.episode)
        self._changed.set()

    def _report(self, record: EpisodeRecord) -> None:
        view = self.shared.view
        view.charged, view.tokens = self.ledger.charged, self.ledger.tokens
        view.cost, view.cost_known = self.ledger.cost
        kind = {"contribute": "committed", "nominate": "nominated"}.get(record.status, record.status)
        self.shared.events.emit(kind, episode=record.episode, worker=record.worker,
                                problem=record.problem, commit=record.commit, note=record.note,
                                tokens=record.tokens_in + record.tokens_out, charged=view.charged)


def _json_state(state: tuple) -> list:
    """The Mersenne Twister's 625 words as one base64 string: the ledger writes this on every
    flush, and as a JSON list of numbers it was the flush's slowest part."""
    words = struct.pack(f"<{len(state[1])}I", *state[1])
    return [state[0], base64.b64encode(words).decode(), state[2]]


def restore_rng(seed: int, state: list | None) -> random.Random:
    """The scheduler's random state as the last run left it (resume keeps determinism)."""
    rng = random.Random(seed)
    if state:
        words = state[1]
        if isinstance(words, str):
            raw = base64.b64decode(words)
            words = struct.unpack(f"<{len(raw) // 4}I", raw)
        rng.setstate((state[0], tuple(words), state[2]))
    return rng
