"""`coordinate`: a run on a git remote, composed by this process from what workers push.

The coordinator's run repository is its mirror of the remote. It publishes the run (main,
meta with the settings workers read), then loops at its `pace`: fetch the claims and the
workers' refs, take in each episode whose claim its holder closed (`intake`: checked at the
boundary, then adopted, or refused and said why), record it in the run's ledger, let the
merger compose main as in a local run, and push main, ledger, notes and op refs by lease.
When a stop condition holds it publishes the stop, waits for the claims in flight to close,
composes what is left, selects each problem's solution and publishes the end state (twice: the
second drops the op refs its main keeps, `oprefs.py`). It looks every `POLL_S` while claims
move, less often while nothing does (`pace.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from gitswarm.core.event_types import ENDED, SetAside
from gitswarm.core.events import Event
from gitswarm.core.remote_events import GivenUp, PublishRefused, Refused, RemoteUnreachable, StopPublished, TakenOver
from gitswarm.core.status import CHARGED, Status
from gitswarm.core.stops import Stop
from gitswarm.domain.rule import Rule
from gitswarm.domain.selection import Selection
from gitswarm.engine import stoprule
from gitswarm.engine.episode import Shared
from gitswarm.engine.kernel import select_all
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.merger import Merger
from gitswarm.engine.setaside import Streaks
from gitswarm.engine.swarm import open_problems
from gitswarm.memory.repo import META_REF, NOTES_REF
from gitswarm.remote import intake, layout, people, publish
from gitswarm.remote.claims import Claim, Claims
from gitswarm.remote.errors import Outage, RefMoved, Unreachable
from gitswarm.remote.oprefs import OpRefs
from gitswarm.remote.pace import POLL_S, Pace
from gitswarm.remote.prune import Pruner
from gitswarm.remote.spending import Spending
from gitswarm.remote.transport import Remote

OWN_REFS = (layout.MAIN, META_REF, "refs/gitswarm/ledger", NOTES_REF, "refs/gitswarm/grades", publish.STOP_REF)
CHECK_S = 5.0
"""Seconds at least between two reads of the remote's main while the coordinator has no new
main to push (one `git ls-remote`): someone else's main stops the run within that."""
LANDING_S = 10.0
"""How long a closed claim's results may stay out of sight before it counts as closed without
them: a remote moves the refs of one atomic push one by one (in name order, claims first),
so a fetch in between sees the claim closed and its results not yet."""


@dataclass
class Coordinator:
    """Takes workers' episodes into the run and decides when it ends."""

    shared: Shared
    """The run's `Shared` (memory, git thread, index, view, events)."""
    ledger: Ledger
    merger: Merger
    remote: Remote
    streaks: Streaks
    claims: Claims
    publisher: publish.Publisher
    started: float = field(default_factory=time.monotonic)
    open_claims: int = 0
    outage: Outage = field(default_factory=Outage)
    spending: Spending = field(default_factory=Spending)
    """What every worker process has spent; `solve` starts it from the ledger's records."""
    moved: RefMoved | None = None
    """The first of its refs on the remote found moved by someone else: the run stops on it."""
    landing: dict[str, float] = field(default_factory=dict)
    """Closed claims whose results were not in sight yet: when first seen so."""
    patience_s: float = 600.0
    """How long the run waits with no claim open and none closing before it stops (`no_workers`)."""
    told: list[Event] = field(default_factory=list)
    """Events of the episodes taken in, said once the ledger that records them is flushed (a
    coordinator killed in between takes them in again on restart, and would say them twice)."""
    active: float = field(default_factory=time.monotonic)
    """When a claim was last seen open or an episode taken in (or the coordinator started)."""
    pruner: Pruner = field(default_factory=Pruner)
    """Deletes the claim and worker refs of episodes the run is done with (`prune.py`)."""
    ops: OpRefs = field(default_factory=OpRefs)
    """The op refs whose commits the remote's main does not reach yet: the only ones it holds."""
    transcripts: dict[str, str] = field(default_factory=dict)
    """The transcripts of the commits adopted this step, noted together (one notes commit)."""
    pace: Pace = field(default_factory=Pace)
    """How long `run` waits before the next step: longer while steps find nothing new."""
    people_seen: set[str] = field(default_factory=set)
    """People's contributions taken in or refused (`remote.people`): looked at once each."""
    main_checked: float = 0.0
    """When the remote's main was last read by `Publisher.check` (every `CHECK_S` at most,
    while no push of main leases it)."""

    @property
    def config(self):
        return self.shared.settings

    async def step(self) -> None:
        """Take in what was pushed since the last step, then publish the run's refs."""
        shared = self.shared
        found = await self._remote(self._fetch)
        if found is None:
            self.active = time.monotonic()  # no sight of the claims is no sign of idle workers (`Outage` bounds it)
            self.pace.saw(None)
            return  # unreachable: the next step fetches again
        now = time.time()
        self.open_claims = sum(1 for c in found.values() if not c.done and not c.expired(now))
        changed = self.spending.seen(found.values(), now)
        for kind, holdings in ((TakenOver, self.spending.taken_over), (GivenUp, self.spending.newly_given_up)):
            for h in holdings:
                shared.events.emit(kind(episode=h.episode, worker=h.worker, problem=h.problem,
                                        generation=h.generation, tokens=h.tokens, usd=h.usd))
        for claim in sorted((c for c in found.values() if c.done), key=lambda c: c.episode):
            if claim.episode not in self.ledger.episodes:
                await self._take(claim)
                changed = True
        await self._people()
        if self.transcripts:  # before the ledger that records their episodes: a crash in between takes them again
            await shared.store.add_transcripts(dict(self.transcripts))
            self.transcripts.clear()
        if changed:  # published with the ledger, for the workers' cap checks
            self.ledger.spending = self.spending.record(self.ledger)
            self.ledger.restate()
            self._show()
        self.open_claims += len(self.landing)
        if self.open_claims or changed:
            self.active = time.monotonic()
        await self.ledger.written(shared.store)
        for event in self.told:
            shared.events.emit(event)
        self.told.clear()
        if await self.publish():
            await self.pruner.step(self)
        main = await shared.store.main()
        self.pace.saw((frozenset(c.id for c in found.values()), main, len(self.ledger.episodes), len(self.landing)))

    def _fetch(self) -> dict[str, Claim]:
        """The claims, then the workers' refs when a claim closed that the ledger lacks: a
        claim closes in the same atomic push as its results, so every closed claim read here
        has its results in the second fetch (and without one there is nothing to take in)."""
        found = self.claims.all()
        if any(c.done and c.episode not in self.ledger.episodes for c in found.values()):
            self.remote.fetch([layout.workers_refspec()], prune=True)
        return found

    async def publish(self) -> bool:
        """Push the run's refs; False while the remote is unreachable (the next call pushes).
        A ref someone else moved is left as it is (said once, and the run stops on it); the
        others are pushed, so the workers still see the stop (bounded: one more try per ref)."""
        publisher = self.publisher
        ops, gone = await self.shared.store.run(self.ops.changes, self.shared.memory, publisher.known.get(layout.MAIN),
                                                dict(publisher.known))
        while True:
            try:
                pushed = await self._remote(publisher.push, [*OWN_REFS, *ops], gone, layout.MAIN)
                if pushed is None:
                    return False
                if layout.MAIN not in pushed and time.monotonic() - self.main_checked >= CHECK_S:
                    self.main_checked = time.monotonic()
                    await self._remote(publisher.check, layout.MAIN)
                return True
            except RefMoved as exc:
                self.moved = self.moved or exc
                self.shared.events.emit(PublishRefused(ref=exc.ref, found=exc.found, local=exc.local,
                                                       detail=str(exc)))

    async def _published(self) -> None:
        """Publish until it lands (bounded: `Outage` raises once the remote is gone too long)."""
        while not await self.publish():
            await anyio.sleep(POLL_S)

    async def _remote(self, fn, *args):
        """`fn(*args)` in a thread, or None when the remote is unreachable (said once per outage)."""
        try:
            result = await anyio.to_thread.run_sync(fn, *args)
        except Unreachable as exc:
            if self.outage.failed(exc):
                self.shared.events.emit(RemoteUnreachable(detail=str(exc)))
            return None
        self.outage.ok()
        return result

    async def _take(self, claim: Claim) -> None:
        """One closed episode into the ledger, its commit adopted if it passes the checks."""
        shared, memory = self.shared, self.shared.memory
        record, item = await shared.store.run(intake.closed, memory, claim)
        made = record.status in CHARGED
        unseen = record.note == intake.NO_RECORD or (item.commit is None and made)
        if unseen and time.monotonic() - self.landing.setdefault(claim.episode, time.monotonic()) < LANDING_S:
            return  # its push may still be landing: the next step fetches again
        self.landing.pop(claim.episode, None)
        if item.commit is not None:
            try:
                text = await shared.store.run(intake.take, memory, item, shared.index.taken)
                if text is not None:
                    self.transcripts[item.commit] = text
                record.commit = item.commit
            except intake.Refused as exc:
                record.status, record.commit = Status.FAILED, None
                record.note = f"refused by the coordinator: {exc.reason}"
                self.told.append(Refused(episode=claim.episode, worker=claim.worker, reason=exc.reason))
        elif made:
            record.status, record.note = Status.FAILED, "refused by the coordinator: no commit was pushed"
        self.spending.took(record)
        self.ledger.changed(record)
        if self.streaks.add(record):
            self.told.append(SetAside(problem=record.problem, episodes=self.config.no_progress,
                                      detail=self.streaks.describe(record.problem)))
        self.ledger.set_aside = sorted(self.streaks.set_aside)
        self._show()
        self.told.append(ENDED[record.status](
            episode=record.episode, worker=record.worker, problem=record.problem, commit=record.commit,
            note=record.note, tokens=record.tokens_in + record.tokens_out, charged=self.ledger.charged,
            process=claim.worker))
        if record.commit:
            self.merger.kick(record.episode)

    async def _people(self) -> None:
        """Take in the people's contributions pushed since the last step (`remote.people`)."""
        shared = self.shared
        for episode, commit in (await shared.store.run(people.waiting, shared.memory, self.people_seen)).items():
            self.people_seen.add(episode)
            try:
                await shared.store.run(people.take, shared.memory, episode, commit, shared.index.taken)
            except intake.Refused as exc:
                shared.events.emit(Refused(episode=episode, worker=exc.worker, reason=exc.reason))
                continue
            self.merger.kick(episode)

    def _show(self) -> None:
        view = self.shared.view
        view.counted(self.ledger.charged, self.ledger.totals.episodes)
        view.spent(*self.spending.total(self.ledger), self.ledger.cost[1])

    def stop(self, user: bool) -> Stop | None:
        """Why the run ends now, or None: the stop rule (`stoprule.decide`) over the run's facts.
        The caps are judged on everything spent, open claims' reports included."""
        cfg, ledger, view = self.config, self.ledger, self.shared.view
        tokens, usd = self.spending.total(ledger)
        lost = self.spending.abandoned_holdings()
        return stoprule.decide(stoprule.Facts(
            budget=cfg.budget, charged=ledger.charged, max_episodes=cfg.max_episodes,
            episodes=ledger.totals.episodes + lost, lost=lost, problems=view.problems, settled=view.settled,
            aside=self.streaks.set_aside, busy=bool(self.open_claims), open=self._open,
            no_progress=lambda aside: self.streaks.no_progress(aside, self._too_few_reviewers()),
            elapsed_s=time.monotonic() - self.started, time_limit_s=cfg.time_limit_s, tokens=tokens, usd=usd,
            max_total_tokens=cfg.max_total_tokens, max_usd=cfg.max_usd,
            moved=None if self.moved is None else str(self.moved), user=user,
            idle_s=time.monotonic() - self.active, patience_s=self.patience_s,
            workers_hint=f"`gitswarm worker {self.remote.shown}`"))

    def _open(self) -> bool:
        """Some problem may still get an episode: not settled, not set aside, not covered by
        nominations enough to settle it (`swarm.open_problems`, as a local run judges it)."""
        view = self.shared.view
        return bool(open_problems(self.shared.index, list(view.problems), view.settled, self.streaks.set_aside, [],
                                  self.config))

    def _too_few_reviewers(self) -> str:
        """Why nothing could be verified, when the worker slots that took part are too few to
        give a candidate `verify` passes from workers other than its author; else empty. A
        local run refuses such settings at the start; a remote run learns its workers as they
        come, so it says so when it stops."""
        rule = Rule.of(self.config)
        slots = {r.worker for r in self.ledger.episodes.values() if r.episode != "merger"}
        if self.shared.modes.by_answers or len(slots) >= rule.workers_needed:
            return ""
        return (f"only {len(slots)} worker slot(s) took part ({', '.join(sorted(slots))}), and a candidate is "
                f"verified by {rule.verify} pass review(s) from slots other than its author's, so no attempt could "
                f"be: start workers with {rule.workers_needed} slots or more in all (`gitswarm worker "
                f"{self.remote.shown} --workers {rule.workers_needed}`), or solve with a smaller --verify, then run "
                "the same command again")

    async def run(self, user_stop: anyio.Event) -> Stop:
        """Step until a stop holds; publish it; then step until the claims in flight close
        (bounded by the episode time limit and a claim's time to live)."""
        while (stop := self.stop(user_stop.is_set())) is None:
            await self.step()
            with anyio.move_on_after(self.pace.wait_s):
                await user_stop.wait()
        memory = self.shared.memory
        await self.shared.store.run(publish.write_stop, memory, stop)
        await self._published()
        self.shared.events.emit(StopPublished(reason=stop.reason.value, detail=stop.detail))
        deadline = time.monotonic() + self.config.episode_timeout_s + self.claims.ttl_s
        await self.step()
        while self.open_claims and time.monotonic() < deadline:
            await anyio.sleep(POLL_S)
            await self.step()
        return stop

    async def select(self) -> dict[str, Selection | None]:
        """Each problem's solution, as a local run selects it, then the end state published."""
        shared = self.shared
        chosen = await select_all(shared, shared.view.problems)
        await self.ledger.written(shared.store)
        await self._published()
        await self._published()  # the op refs whose commits that main reaches, deleted
        return chosen
