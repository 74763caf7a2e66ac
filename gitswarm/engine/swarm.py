"""The scheduler: keeps C episodes in flight until the budget is spent, every problem is
settled or set aside, a cap is reached or the user stops.

Which problem it starts an episode on next, and which free worker runs it, are pure functions
of the index and of what is busy (`open_problems`, `pick`, over `tasks.next_task`: the rule
the state's "most useful next" follows too); the random tie-break
is the scheduler's seeded generator, so a resumed run picks as the run before it would have.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import anyio

from gitswarm.core.control import Control
from gitswarm.core.event_types import ENDED, EpisodeStarted, SetAside
from gitswarm.core.events import RUN_LOG
from gitswarm.core.status import Status
from gitswarm.core.stops import Stop
from gitswarm.domain import selection
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import plan, reviewing, stoprule, tasks
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.episode import run_episode
from gitswarm.engine.failures import Breakers
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.plan import EpisodePlan
from gitswarm.engine.rngstate import json_state
from gitswarm.engine.setaside import Streaks
from gitswarm.engine.shared import Shared
from gitswarm.engine.source import EpisodeSource
from gitswarm.engine.stopping import Cut, wind_down
from gitswarm.problems.model import ProblemSet

Unmerged = Mapping[str, tuple[str, str, str]]
"""Commit -> (problem, worker, status) of finished episodes the index does not hold yet."""


def open_problems(index: MemoryIndex, problems: list[str], settled: Collection[str], aside: Collection[str],
                  busy: list[str], cfg: SolveConfig) -> list[str]:
    """Problems an episode may start on: not settled, not set aside, and not covered (a
    verified leader with enough nominations, made or in the making, to settle it: more
    episodes would only vote). `busy` holds one problem per nomination in the making."""

    rule = Rule.of(cfg)

    def covered(p: str) -> bool:
        found = selection.standings(index, p, rule)
        top = selection.choose(found, rule)
        return (top is not None and top.verified and selection.nominations_matter(found, rule)
                and top.nominations + busy.count(p) >= cfg.settle_nominations)

    return [p for p in problems if p not in settled and p not in aside and not covered(p)]


def pick(index: MemoryIndex, open_: list[str], busy: list[str], free_workers: list[str], unmerged: Unmerged,
         rule: Rule, rng: random.Random, waiting: bool, announced: Mapping[str, str] | None = None,
         tight: bool = False) -> tuple[str, str] | None:
    """A problem of `open_` and a free worker, by what the episode would do there
    (`tasks.next_task`): the step that leads most directly to a selection first (a review that
    counts toward verifying the candidate nearest to it, then a nomination that can change the
    outcome, a revision, a first attempt, another attempt), then the least worked problem
    (contributions, and 2 for each episode `busy` on it), then `rng`. A worker goes to no
    problem where its only task would be reviewing its own work, nor where it has work not
    merged yet (it would not see it); a filler (`tasks.FILLER`: another attempt beside
    candidates waiting for others' reviews, beside a first attempt finished and not merged
    yet, beside one under way in a run without nominations or on a problem that has its share
    of the workers already, or with a `tight` budget) only when nothing in flight could change
    what is worth doing. When no pair is worth starting and nothing is in flight, being claimed
    or waiting to be merged (not `waiting`), the first problem goes to the first free worker, so that a run that cannot
    progress ends by the no-progress rule."""
    recent: dict[str, set[str]] = {}  # problem -> the workers with work there not merged yet
    for where, worker, _ in unmerged.values():
        recent.setdefault(where, set()).add(worker)
    landing = [where for where, _, _ in unmerged.values()]
    working, pending, landed = Counter(busy), Counter(busy + landing), Counter(landing)
    share = -(-(len(free_workers) + len(busy)) // max(1, len(open_)))  # the workers per open problem
    notes: dict[str, list[str]] = {}
    for said in (announced or {}).values():  # "problem: intent" (a problem's id holds no ": ")
        notes.setdefault(said.partition(": ")[0], []).append(said)
    best: tuple[tuple, str, str] | None = None
    for problem in open_:
        work = sum(index.problems[problem].kinds.values()) + 2 * working[problem]
        tie = rng.random()
        mine = recent.get(problem, ())
        workers = [worker for worker in free_workers if worker not in mine] if mine else free_workers
        if not workers:
            continue
        worker, task = tasks.best_task(index, problem, workers, rule, " ".join(notes.get(problem, ())),
                                       pending[problem], tight, landing=landed[problem], share=share)
        key = (-task.value, work, tie)
        if task.value > 0 and (best is None or key < best[0]):
            best = (key, problem, worker)
    if best is not None and (-best[0][0] > tasks.FILLER or not waiting):
        return best[1], best[2]
    return (open_[0], free_workers[0]) if open_ and free_workers and not waiting else None


@dataclass
class Scheduler:
    """Starts episodes; one instance per `solve`."""

    shared: Shared
    ledger: Ledger
    source: EpisodeSource
    """Where the episodes come from: the run's own (`LocalSource`), or a remote run's claims."""
    problem_set: ProblemSet
    problems: list[str]
    control: Control
    rng: random.Random
    streaks: Streaks
    """The no-progress rule's state, derived from the ledger at start."""
    in_flight: dict[str, EpisodeRecord] = field(default_factory=dict)
    free_workers: list[str] = field(default_factory=list)
    """Idle workers, the longest idle first (so that one quick to finish, abstaining say,
    does not take every slot the budget leaves)."""
    ended_by: Stop | None = None
    """A stop an episode ran into: a cap, or a model error no retry can fix."""
    breakers: Breakers = field(init=False)
    """Episodes in a row failed by the provider, or by an engine error (`engine.failures`)."""
    unmerged: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Commit -> (problem, worker, status) of finished episodes the index does not hold yet (the
    merger has not composed them): their authors and nominations are known before main is."""
    claiming: list[str] = field(default_factory=list)
    """The problems of picks whose ids the source is claiming: busy, as if in flight."""
    cuts: dict[str, Cut] = field(default_factory=dict)
    """How to cut each episode in flight short (`stopping.wind_down`)."""
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        log = self.shared.events.path.with_name(RUN_LOG)
        self.breakers = Breakers(max(3, self.config.workers), log=str(log))

    @property
    def config(self) -> SolveConfig:
        return self.shared.settings

    async def loop(self) -> Stop:
        """Run episodes until a stop condition holds; returns why it stopped."""
        started = time.monotonic()
        self._show()
        async with anyio.create_task_group() as tg:
            await self.source.resume(lambda record: self._restart(tg, record))
            while (stop := await self._next_stop(started)) is None:
                held = await self._new_ids(self._picks())
                if not held:
                    await self._wait()
                    continue
                await self._start(tg, [(episode, worker, problem) for (episode, problem), worker in held])
            await wind_down(stop, self.in_flight, self.cuts, self.control, self.config.stop_grace_s,
                            self.shared.events)
            ended = stop
        return ended

    async def _next_stop(self, started: float) -> Stop | None:
        """`_stop` where it is the source's to end on, else the stop the run's owner published."""
        published = await self.source.refresh()
        own = self._stop(started)
        return own if own is not None and self.source.stops_on(own) else published

    def _picks(self) -> list[tuple[str, str]]:
        """The (problem, worker) pairs to start now, their workers taken from the free ones:
        one, or for a source that claims in batches every pair that may start, each pick seeing
        those before it, so that the source claims them together."""
        picks: list[tuple[str, str]] = []
        while self._may_start() and (picked := self._pick()) is not None:
            picks.append(picked)
            self.free_workers.remove(picked[1])
            self.claiming.append(picked[0])
            if not self.source.batch:
                break
        return picks

    async def _new_ids(self, picks: list[tuple[str, str]]) -> list[tuple[tuple[str, str], str]]:
        """((episode, problem), worker) for the picks that got an id; the others' workers are
        free again, first in line."""
        if not picks:
            return []
        try:
            ids = await self.source.claim(picks)
        finally:
            self.claiming.clear()
        self.free_workers[:0] = [worker for held, (_, worker) in zip(ids, picks, strict=True) if held is None]
        return [(held, worker) for held, (_, worker) in zip(ids, picks, strict=True) if held is not None]

    def _stop(self, started: float) -> Stop | None:
        """Why the run must stop now, or None: the stop rule (`stoprule.decide`) over this
        process's facts; a cap reached inside a call comes as the episode's stop."""
        cfg, view = self.config, self.shared.view
        return stoprule.decide(stoprule.Facts(
            budget=cfg.budget, charged=self.ledger.charged, max_episodes=cfg.episode_cap,
            episodes=self.ledger.totals.episodes, problems=self.problems, settled=view.settled,
            aside=self.streaks.set_aside, busy=bool(self.in_flight), open=lambda: bool(self._open()),
            no_progress=self.streaks.no_progress, elapsed_s=time.monotonic() - started,
            time_limit_s=cfg.time_limit_s, failed=self.ended_by or self.breakers.stop(),
            user=self.control.stop.is_set(), by_signal=self.control.bounded))

    def _may_start(self) -> bool:
        """A worker is free, not paused, and the source lets one more episode start (a local
        run's budget and episode cap; a remote run's claims hold both across every process)."""
        return (not self.control.paused and bool(self.free_workers)
                and self.source.may_start(len(self.in_flight) + len(self.claiming)))

    async def _wait(self) -> None:
        with anyio.move_on_after(0.5):
            await self._changed.wait()
        self._changed = anyio.Event()

    def _open(self) -> list[str]:
        """`open_problems`, counting as nominations in the making the episodes in
        flight or being claimed and the nominations not yet merged."""
        busy = [r.problem for r in self.in_flight.values()] + self.claiming
        with self.shared.index.lock:  # the live index: no commit taken in while it is read
            busy += [p for p, _, status in self._unmerged().values() if status == Status.NOMINATE]
            return open_problems(self.shared.index, self.problems, self.shared.view.settled,
                                 self.streaks.set_aside, busy, self.config)

    def _unmerged(self) -> dict[str, tuple[str, str, str]]:
        """`unmerged`, less what the index now holds."""
        for commit in [c for c in self.unmerged if c in self.shared.index.files_of]:
            del self.unmerged[commit]
        return self.unmerged

    def _pick(self) -> tuple[str, str] | None:
        """`pick` over `_open`, counting as busy the episodes in flight, being
        claimed, and other processes' too."""
        busy = [r.problem for r in self.in_flight.values()] + self.claiming
        busy += self.source.elsewhere()
        with self.shared.index.lock:  # the live index: no commit taken in while it is read
            unmerged, open_ = self._unmerged(), self._open()
            return pick(self.shared.index, open_, busy, self.free_workers, unmerged, Rule.of(self.config),
                        self.rng, waiting=bool(self.in_flight or self.claiming or unmerged),
                        announced=self.shared.view.announcements, tight=self._tight(open_, len(busy)))

    def _tight(self, open_: list[str], busy: int) -> bool:
        """The budget left, less the episodes in flight, cannot pay for a selection on every open
        problem without a verified candidate (`Rule.episodes_to_select` each)."""
        view, rule = self.shared.view, Rule.of(self.config)
        waiting = [p for p in open_ if p not in view.verified]
        return rule.budget_short(self.config.budget - view.charged - busy, len(waiting)) is not None

    async def _restart(self, tg, record: EpisodeRecord) -> bool:
        """Start again an episode a crash cut off, on its own worker, if that worker is free
        and its problem not settled."""
        if record.worker not in self.free_workers or record.problem in self.shared.view.settled:
            return False
        self.free_workers.remove(record.worker)
        await self._start(tg, [(record.episode, record.worker, record.problem)], restarted=True)
        return True

    async def _start(self, tg, starts: list[tuple[str, str, str]], restarted: bool = False) -> None:
        """Start each (episode, worker, problem) of `starts` from main's tip, once their
        `running` records are saved (one ledger write for them all)."""
        shared = self.shared
        self.ledger.rng_state = json_state(self.rng.getstate())
        records = [EpisodeRecord(episode, worker, problem) for episode, worker, problem in starts]
        for record in records:
            self.ledger.changed(record)
        await self.ledger.written(shared.store)
        tips = (await shared.store.main(), await shared.store.root())
        for record in records:
            self.in_flight[record.episode] = record
            found = self.problem_set.get(record.problem)
            with shared.index.lock:
                review = reviewing.assignment(shared.index, shared.view, record.problem, record.worker,
                                              Rule.of(self.config), shared.modes.reviews)
            info = plan.plan(self.config, record.episode, record.worker,
                             (record.problem, found.kind.value, found.title, found.executable), tips, review,
                             image=(found.image, found.reference_in_image))
            if info.reviewing:  # what the other episodes read of it: it announces nothing itself
                shared.view.announce(record.worker, f"{record.problem}: reviewing {info.assigned.path}")
            shared.view.working(record.worker, record.episode, record.problem, 0)
            shared.events.emit(EpisodeStarted(episode=record.episode, worker=record.worker,
                                              problem=record.problem, restarted=restarted))
            tg.start_soon(self._episode, info, record)

    async def _episode(self, info: EpisodePlan, record: EpisodeRecord) -> None:
        shared = self.shared
        self.cuts[record.episode] = cut = Cut()
        try:
            ended = await run_episode(shared, info, record, cut)
        finally:
            del self.cuts[record.episode]
        self.ended_by = self.ended_by or ended.stop
        record.ended = time.time()
        self.breakers.add(record.status, record.failure, record.note)
        aside = self.streaks.add(record)
        self.ledger.set_aside = sorted(self.streaks.set_aside)  # written with the record, for status
        await self.ledger.write(shared.store, record)
        await self.source.finished(record)
        self._report(record, ended.review or {})
        if aside:
            shared.events.emit(SetAside(problem=record.problem, episodes=self.config.no_progress,
                                        detail=self.streaks.describe(record.problem)))
        del self.in_flight[record.episode]
        self.free_workers.append(record.worker)  # last in line: the longest idle goes first
        if record.commit:
            self.unmerged[record.commit] = (record.problem, record.worker, record.status)
        self._changed.set()

    def _show(self) -> None:
        """Bring the run's view (what every step's header shows) up to date with the ledger."""
        view = self.shared.view
        view.counted(self.ledger.charged, self.ledger.totals.episodes)
        view.spent(self.ledger.tokens, *self.ledger.cost)
        view.put_aside(self.streaks.set_aside)

    def _report(self, record: EpisodeRecord, review: dict[str, str]) -> None:
        """The event of an ended episode (a review's with its verdict and what it reviews)."""
        self._show()
        view = self.shared.view
        self.shared.events.emit(ENDED[record.status](
            episode=record.episode, worker=record.worker, problem=record.problem, commit=record.commit,
            note=record.note, tokens=record.tokens_in + record.tokens_out, charged=view.charged,
            failure=record.failure or None, verdict=review.get("verdict"), reviews=review.get("reviews")))
