"""Pruning the remote's refs of the episodes a run is done with.

Each remote episode leaves a claim ref and its closer's branch and op ref under
`refs/gitswarm/workers/<name>/`, and none of them is needed once the coordinator has the
episode: its record is in the run's ledger, its commit (if adopted) on main under the
coordinator's own op ref, its transcript in the run's notes. Left there they grow every push
and fetch of the run (a push cost ~300 ms at 3,000 loose refs against ~50 ms packed). The
coordinator deletes them, a batch of episodes at a time, in one atomic push whose every
delete is leased on the value it read.

An episode is pruned only when all of this holds, so neither `git clone URL` nor a
restarted coordinator misses anything:

- its claim is closed (`done`), or already gone, and its number is at or below the run's
  high-water mark (`highwater.py`): the number is never claimed again, so a late push of a
  pruned claim (its lease names a claim commit the remote no longer has) is refused as
  `ClaimLost`, and a takeover raises `ClaimPruned`;
- its record is in the run's ledger as the coordinator last *published* it, so a
  coordinator restarted on its mirror or on a fresh one knows the episode and never looks
  for its claim (the ledger, not the claims, says what was taken in);
- it has no commit (abstained, failed, refused: the refused commit stays out of the run) or
  its adopted branch is gone from the coordinator's repository (merged: the merger deletes a
  branch with the move of main that takes it in), and that main was published.

"Published" is judged against what the `Publisher` last pushed: the batch remembers the
main and ledger commits it was gathered at, and is pushed only once the remote's values are
those or their descendants (the next step, or at once when nothing moved). A batch pushed
again after its answer was lost finds its refs gone and its leases failed (`StaleLease`): with
none of them left on the remote it is done, not stale. The workers' ledger books and notes are
theirs for good: `status` reads their last push from them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import anyio.to_thread

from gitswarm.core.remote_events import Pruned, PruneRefused, PruneStale
from gitswarm.memory import books, write
from gitswarm.memory.gitdir import GitReader
from gitswarm.remote import highwater, layout
from gitswarm.remote.errors import PushRejected, RemoteError, StaleLease, Unreachable
from gitswarm.remote.transport import Update

PRUNE_BATCH = 64
"""Episodes pruned together, in one push (at the run's end, whatever are left)."""
REFUSALS = 3
"""Refused prune pushes in a row after which pruning stops for the run: a remote that denies
deletes (`receive.denyDeletes`) refuses every one, a lock held there refuses one."""
MOST = 500
"""Episodes in one prune push at most (a resumed run's backlog goes in several): git's
command line holds two arguments per ref."""
LEDGER = books.ref_name("ledger")


@dataclass(frozen=True)
class Batch:
    episodes: tuple[str, ...]
    updates: tuple[Update, ...]
    main: str
    ledger: str
    """The coordinator's main and ledger when the batch was gathered: they must be published first."""


@dataclass
class Pruner:
    """Deletes, in batches, the claim and worker refs of episodes the run is done with."""

    batch: int = PRUNE_BATCH
    """Episodes per prune push; 0 keeps every ref (the claims' history stays on the remote)."""
    waiting: Batch | None = None
    pruned: int = 0
    """Episodes pruned by this process."""
    refused: str | None = None
    """Why the remote refused `REFUSALS` prune pushes in a row (then nothing more is pruned)."""
    refusals: int = 0

    async def step(self, coordinator) -> None:
        """After a publish: push the waiting batch if its state is published; else gather one
        when enough episodes are done."""
        await self._step(coordinator, False)

    async def end(self, coordinator) -> None:
        """At the run's end, once its last state is published: prune every episode left."""
        while await self._step(coordinator, True):
            pass

    async def _step(self, coordinator, final: bool) -> bool:
        """True when a batch was pushed."""
        if not self.batch or self.refused is not None or coordinator.moved is not None:
            return False
        if self.waiting is None:
            least, claims = 1 if final else self.batch, coordinator.claims.known()
            if sum(1 for c in claims.values() if c.done and c.episode in coordinator.ledger.episodes) < least:
                return False
            shared = coordinator.shared
            mark = await shared.store.run(highwater.local, coordinator.remote)  # reads ref files: not on the loop
            if await shared.store.run(gather, shared.store.reader(), coordinator.ledger, claims, mark, least) is None:
                return False  # not merged yet: the next step looks again, without a fetch
            await anyio.to_thread.run_sync(self._refresh, coordinator)
            self.waiting = await shared.store.run(gather, shared.store.reader(), coordinator.ledger, claims, mark,
                                                  least)
        batch = self.waiting
        if batch is not None and await coordinator.shared.store.run(self._published, coordinator, batch):
            return await anyio.to_thread.run_sync(self._push, coordinator, batch)
        return False

    def _refresh(self, coordinator) -> None:
        """The workers' refs as the remote has them now: the leases of the deletes."""
        with contextlib.suppress(Unreachable):  # the push's leases then fail, or it waits for the remote
            coordinator.remote.fetch([layout.workers_refspec()], prune=True)

    def _published(self, coordinator, batch: Batch) -> bool:
        repo, known = coordinator.shared.memory.reader(), coordinator.publisher.known
        return repo.in_history(batch.main, known.get(layout.MAIN)) and repo.in_history(batch.ledger, known.get(LEDGER))

    def _push(self, coordinator, batch: Batch) -> bool:
        events = coordinator.shared.events
        try:
            coordinator.remote.push(list(batch.updates))
        except Unreachable:
            return False  # the next step pushes it again
        except StaleLease as exc:  # a ref moved since it was read: gathered again, from a new fetch
            self.waiting = None
            if not self._gone(coordinator, batch):
                events.emit(PruneStale(refs=list(exc.stale)[:10], detail=str(exc)))
                return False  # else every ref is gone: our own push of the batch landed, its answer lost
        except PushRejected as exc:  # a lock held there, or deletes denied: the latter every time
            self.refusals, self.waiting = self.refusals + 1, None
            events.emit(PruneRefused(detail=str(exc), again=self.refusals < REFUSALS))
            if self.refusals >= REFUSALS:
                self.refused = str(exc)
            return False
        except RemoteError:
            return False
        self.waiting, self.refusals = None, 0
        self.pruned += len(batch.episodes)
        events.emit(Pruned(episodes=list(batch.episodes), refs=len(batch.updates), total=self.pruned))
        return True

    def _gone(self, coordinator, batch: Batch) -> bool:
        """Whether none of the batch's refs is left on the remote (fetched so, the mirror too)."""
        try:
            coordinator.remote.fetch([layout.claims_refspec(), layout.workers_refspec()], prune=True)
        except RemoteError:
            return False
        return all(coordinator.remote.local(u.ref) is None for u in batch.updates)


def gather(repo: GitReader, ledger, claims: dict, mark: int, least: int) -> Batch | None:
    """The episodes ready to prune (the module docstring's rules) and their deletes, or None
    when fewer than `least` are ready. Refs are read before main, so a branch found gone was
    merged into a main at or before the one remembered."""
    branches = repo.refs("refs/heads/swarm/")
    present = repo.refs(layout.CLAIMS)  # the mirror follows our deletes
    refs: dict[str, list[Update]] = {}
    for claim in claims.values():
        if claim.done and layout.claim_ref(claim.episode) in present:
            refs.setdefault(claim.episode, []).append(Update(layout.claim_ref(claim.episode), None, claim.id))
    for name in sorted(repo.refs(layout.WORKERS)):
        episode, value = _episode_of_worker_ref(name), repo.ref(name)
        if episode is not None and value is not None:
            refs.setdefault(episode, []).append(Update(name, None, value))
    ready = sorted(e for e in refs if _ready(repo, ledger, branches, mark, e))[:MOST]
    if len(ready) < max(least, 1):
        return None
    main, tip = repo.ref(layout.MAIN), repo.ref(LEDGER)
    if main is None or tip is None:
        return None
    return Batch(tuple(ready), tuple(u for e in ready for u in refs[e]), main, tip)


def _ready(repo: GitReader, ledger, branches: set[str], mark: int, episode: str) -> bool:
    record = ledger.episodes.get(episode)
    number = highwater.number_of(episode)
    if record is None or not 0 < number <= mark:
        return False
    if record.commit is not None and write.branch_ref(episode) in branches:
        return False  # adopted and not merged yet
    return repo.record("ledger", f"episodes/{episode[:4]}/{episode}.json") is not None  # flushed


def _episode_of_worker_ref(name: str) -> str | None:
    """The episode of a worker's per-episode ref (its branch `heads/swarm/<episode>`, its op
    refs `gitswarm/ops/<episode>-<final|incomplete>`); None for its ledger book and notes."""
    found = layout.local_ref(name)
    if found is None:
        return None
    local = found[1]
    if local.startswith("refs/heads/swarm/"):
        return local.removeprefix("refs/heads/swarm/")
    if local.startswith("refs/gitswarm/ops/"):
        return local.removeprefix("refs/gitswarm/ops/").split("-", 1)[0]
    return None
