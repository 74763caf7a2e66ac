"""A remote worker's episodes: claimed on the run's remote, their results pushed back to it.

The worker's folder is a run repository laid out as a local run's and is also its mirror of
the remote: `main` and `refs/gitswarm/meta` are fetched from the remote (so the engine reads
the run exactly as a local one), the coordinator's ledger is fetched as `RUN_LEDGER`, and
its own episodes write branches, op refs, its ledger book and transcript notes locally as
they always do. `ClaimSource` is the scheduler's `EpisodeSource`: every episode id is a
claim (`Claims.claim_next`, capped so the budget and the episode cap hold across every
worker), held by renewals while it runs, and closed with `Claims.finish` in the same atomic
push as the episode's results under `refs/gitswarm/workers/<name>/` (episodes that end
together go in one push: `results.py`). The worker stops when the coordinator publishes the run's stop.
Problems the worker cannot run (`skip`: reproduce problems, when it has no references) are
never claimed, nor their expired claims taken over; when only they are left open it says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from gitswarm.core.events import Event
from gitswarm.core.remote_events import ClaimsLost, PushFailed, RemoteUnreachable, SkippedOnly
from gitswarm.core.stops import Stop, StopReason
from gitswarm.domain import selection
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.domain.rule import Rule
from gitswarm.engine.episode import Shared
from gitswarm.engine.swarm import open_problems
from gitswarm.memory.repo import Memory
from gitswarm.remote import layout, publish
from gitswarm.remote.claims import Claim, ClaimHeld, ClaimLost, ClaimPruned, Claims
from gitswarm.remote.errors import MissingRef, Outage, RemoteError, Unreachable
from gitswarm.remote.pace import Pace
from gitswarm.remote.publish import RunStreaks
from gitswarm.remote.results import ResultPush
from gitswarm.remote.spending import CHECK_S, REPORT_S, Published, spent
from gitswarm.remote.transport import Remote

RUN_LEDGER = layout.RUN_LEDGER


@dataclass
class ClaimSource:
    """Episode ids from the remote's claims, results back to it (see the module docstring)."""

    remote: Remote
    claims: Claims
    memory: Memory
    shared: Shared
    """The scheduler's `Shared`: its index and view are brought up to the fetched main."""
    settings: dict
    ttl_s: float
    held: dict[str, Claim] = field(default_factory=dict)
    stop: Stop | None = None
    idle_since: float = field(default_factory=time.monotonic)
    patience_s: float = 600.0
    """How long a worker with nothing to claim waits for the coordinator's stop."""
    _fetched: float = 0.0
    pace: Pace = field(default_factory=Pace)
    """How long `refresh` waits between two looks: longer while the run's refs stand still."""
    _uncharged: int = 0
    _done: list[EpisodeRecord] = field(default_factory=list)
    _remote_lock: anyio.Lock = field(default_factory=anyio.Lock)
    """Claim moves are serialised: a renewal and a close of one claim must not race."""
    outage: Outage = field(default_factory=Outage)
    spending: Published | None = None
    """The coordinator's count of the run's spending, updated with each fetch of its ledger."""
    streaks: RunStreaks | None = None
    """The scheduler's no-progress rule: the problems the coordinator set aside."""
    _reported: dict[str, tuple[int, float]] = field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    """Problems this worker cannot run (reproduce problems without their references, code
    problems on a machine without a sandbox): the scheduler never picks them, and their
    expired claims are left to other workers."""
    skip_why: str = ("a reproduce problem, and this worker has no reference executables. To run them, start a "
                     "worker with --references SET, SET being the problem set the coordinator runs")
    """Why it skips them and what runs them, as `skipped_only` says it (`remote.worker.skipped`)."""
    say: Callable[[str], None] = lambda _: None
    """Tells the user, once, that only problems it skips are left open."""
    _told: bool = False
    results: ResultPush = field(init=False)
    """Pushes finished episodes with the claims they close (`results.py`)."""

    def __post_init__(self) -> None:
        self.results = ResultPush(self.remote, self.claims, self.memory, self._emit)

    async def _call(self, fn, *args):
        async with self._remote_lock:
            return await anyio.to_thread.run_sync(fn, *args)

    async def _reach(self, fn, *args, claims: bool = True):
        """`_call` (without the claims lock for a call that moves no claim: a fetch), or None
        while the remote is unreachable (for at most `Outage.limit_s`)."""
        try:
            result = await (self._call(fn, *args) if claims else anyio.to_thread.run_sync(fn, *args))
        except Unreachable as exc:
            if self.outage.failed(exc):
                self._emit(RemoteUnreachable(detail=str(exc), worker=self.claims.worker))
            return None
        self.outage.ok()
        return result

    batch = True  # the picks of one step are claimed in one push
    OWN_STOPS = frozenset({StopReason.MODEL_FATAL, StopReason.TOKEN_CAP, StopReason.USD_CAP,
                           StopReason.PROVIDER_FAILING, StopReason.ENGINE_ERRORS, StopReason.USER,
                           StopReason.TIME_LIMIT})
    """The scheduler's stops that end a worker: the rest (budget, settling) are the coordinator's."""

    def stops_on(self, own: Stop) -> bool:
        return own.reason in self.OWN_STOPS

    def may_start(self, starting: int) -> bool:
        return True  # the run's claims hold its budget and episode cap across every process

    async def resume(self, restart) -> None:
        return None  # a crash's episode is its claim's: whoever takes it over runs it

    async def refresh(self) -> Stop | None:
        if self.stop is not None or time.monotonic() - self._fetched < self.pace.wait_s:
            return self.stop
        self._fetched = time.monotonic()
        shared = self.shared
        if await self._reach(self._fetch, claims=False) is None:
            self.pace.saw(None)
            return self.stop  # the next refresh fetches again
        main = await shared.store.main()
        await shared.store.update_index(shared.index, main)
        shared.view.settle(*selection.standing_of(shared.index, list(self.settings["problems"]),
                                                  Rule.of(shared.settings)))
        self.stop = await shared.store.run(publish.read_stop, shared.store.reader())
        self._only_skipped_open()
        if self.stop is None and not self.held and time.monotonic() - self.idle_since > self.patience_s:
            self.stop = Stop(StopReason.TIME_LIMIT, f"nothing to claim for {self.patience_s:.0f} s and no stop "
                             "published by the coordinator")
        return self.stop

    def _only_skipped_open(self) -> None:
        """Say once (on the console, and as a `skipped_only` event) that every open problem of
        the run is one this worker skips, and what to pass to run them."""
        if self._told or not self.skip or self.stop is not None:
            return
        view = self.shared.view
        aside = self.streaks.set_aside if self.streaks is not None else set()
        left = open_problems(self.shared.index, list(self.settings["problems"]), view.settled, aside, [],
                             self.shared.settings)
        if left and set(left) <= self.skip:
            self._told = True
            detail = (f"every open problem of the run ({', '.join(left)}) is {self.skip_why}; this worker waits "
                      "for the coordinator's stop (at most its --patience)")
            self.say(detail)
            self._emit(SkippedOnly(worker=self.claims.worker, problems=left, detail=detail))

    def _fetch(self) -> bool:
        """One fetch of main, the coordinator's ledger and the stop: those the remote has and
        that moved since the last fetch (none moved: no fetch). The same ls-remote shows the
        high-water mark, which the next `claim_next` numbers above."""
        have = self.remote.refs(layout.MAIN, "refs/gitswarm/ledger", publish.STOP_REF, f"{layout.HIGH_WATER}*")
        self.pace.saw(tuple(sorted(have.items())))  # nothing moved: look less often (`pace.py`)
        self.claims.saw(have)  # the next batch is numbered above other processes' at once
        specs = {layout.MAIN: layout.MAIN, "refs/gitswarm/ledger": RUN_LEDGER, publish.STOP_REF: publish.STOP_REF}
        wanted = [f"+{ref}:{local}" for ref, local in specs.items()
                  if ref in have and have[ref] != self.remote.local(local)]
        try:
            if wanted:
                self.remote.fetch(wanted)
        except MissingRef:
            return False  # moved meanwhile: the next refresh fetches it
        state = self.memory.record("run-ledger", "scheduler.json")  # a fetch thread: the memory's lock orders the read
        state = state if isinstance(state, dict) else {}
        totals = state.get("totals") or {}
        self._uncharged = int(totals.get("episodes", 0)) - int(totals.get("charged", 0))
        if self.spending is not None:
            self.spending.record = state.get("spending") or {}
        if self.streaks is not None:
            self.streaks.published = {str(p) for p in state.get("set_aside") or ()}
        return True

    async def claim(self, picks: list[tuple[str, str]]) -> list[tuple[str, str] | None]:
        """An expired claim (a dead worker's) taken over for the first pick when the coordinator
        counted one, so its episode runs again on its own problem; new episodes for the other
        picks' problems in one push, numbered at most the cap: the episode cap, and the budget
        plus the finished uncharged episodes the coordinator has counted, so at most the budget
        can ever be charged however many workers claim at once. At the cap, an expired claim is
        looked for in any case."""
        if self.stop is not None:
            return [None] * len(picks)
        cfg = self.shared.settings
        cap = min(cfg.episode_cap, cfg.budget + self._uncharged)
        got: list[Claim] = []
        if self.spending is not None and self.spending.expired():
            got = await self._reach(self._take_expired, picks[0][0]) or []
        rest = [problem for problem, _ in picks[len(got):]]
        new = await self._reach(self.claims.claim_next, rest, cap) if rest else []
        if new == [] and not got:  # at the cap: an expired claim is looked for in any case
            got = await self._reach(self._take_expired, picks[0][0]) or []
        got += new or []
        self.held |= {claim.episode: claim for claim in got}
        if got:
            self.idle_since = time.monotonic()
        return [(c.episode, c.problem) for c in got] + [None] * (len(picks) - len(got))

    def _take_expired(self, problem: str) -> list[Claim]:
        """An expired claim taken over: one on `problem` first, else on any problem (the
        scheduler may keep picking another problem, and a claim left expired would hold its
        number for good)."""
        now = self.claims.clock()
        expired = [c for c in self.claims.all().values()
                   if c.expired(now) and not c.given_up(now) and c.problem not in self.skip]
        for claim in sorted(expired, key=lambda c: (c.problem != problem, c.episode)):
            try:
                return [self.claims.take_over(claim)]
            except (ClaimHeld, ClaimPruned):
                continue
        return []

    async def renew(self) -> None:
        """Keep the held claims alive while their episodes run (renewed when a third of their
        time to live is gone), and while a token or USD cap is set report what they spent:
        at least every `REPORT_S`, and as soon as this process's unreported spending reaches
        its share of what the cap leaves (`Published.unreported_due`), so reports come
        faster as the cap nears. The claims due go in one push."""
        cfg = self.shared.settings
        capped = cfg.max_total_tokens is not None or cfg.max_usd is not None
        every = CHECK_S if capped else self.ttl_s / 3
        reported = time.monotonic()
        while True:
            await anyio.sleep(every)
            soon = time.time() + 2 * self.ttl_s / 3
            due = [e for e, c in self.held.items() if c.expires <= soon]
            if capped and self.spending is not None:
                unreported = {e: self._spent(e) for e, c in self.held.items() if self._spent(e) != (c.tokens, c.usd)}
                if unreported and (time.monotonic() - reported >= REPORT_S or self.spending.unreported_due(
                        cfg, self._unreported(unreported), self.shared.ledger)):
                    due = sorted({*due, *unreported})
            if due:
                reported = time.monotonic()
                await self._call(self._renew, due)

    def _unreported(self, spent_now: dict[str, tuple[int, float]]) -> tuple[int, float]:
        """What the held claims spent since their last report."""
        tokens = sum(t - self.held[e].tokens for e, (t, _) in spent_now.items() if e in self.held)
        usd = sum(u - self.held[e].usd for e, (_, u) in spent_now.items() if e in self.held)
        return tokens, usd

    def _renew(self, episodes: list[str]) -> None:
        """Renew the held claims of `episodes`, with what they spent, in one push; a lost one
        is dropped (its episode runs on, its results will not be taken) and the rest renewed."""
        due = [self.held[e] for e in episodes if e in self.held]  # not closed meanwhile
        while due:
            try:
                renewed = self.claims.renew(due, {c.episode: self._spent(c.episode) for c in due})
            except ClaimLost as exc:
                self._emit(ClaimsLost(worker=self.claims.worker, episodes=sorted(c.episode for c in exc.lost),
                                      detail=str(exc)))
                for claim in exc.lost:
                    self.held.pop(claim.episode, None)
                due = [c for c in due if c not in exc.lost]
                continue
            except RemoteError as exc:
                self._emit(PushFailed(worker=self.claims.worker, episodes=sorted(c.episode for c in due),
                                      detail=str(exc)))
                return
            for claim in renewed:
                self.held[claim.episode] = claim
            return

    def elsewhere(self) -> list[str]:
        """The problems other processes are working on, as the coordinator last counted them."""
        return self.spending.busy() if self.spending is not None else []

    def _spent(self, episode: str) -> tuple[int, float]:
        """What the episode's calls have spent so far, from the worker's ledger."""
        record = self.shared.ledger.episodes.get(episode)
        return spent(record) if record is not None else (0, 0.0)

    async def finished(self, record: EpisodeRecord) -> None:
        """Close the episode's claim with its results; several ending together: one push, by
        the first to get the remote, and the others find theirs gone (no second call)."""
        self._done.append(record)
        async with self._remote_lock:
            if self._done:
                await anyio.to_thread.run_sync(self._push_done)
        self.idle_since = time.monotonic()

    def _push_done(self) -> None:
        batch, self._done = [r for r in self._done if r.episode in self.held], []
        self.results.push(batch, self.held)

    def _emit(self, event: Event) -> None:
        self.shared.events.emit(event)
