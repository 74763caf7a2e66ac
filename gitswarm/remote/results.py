"""A worker's results pushed back to the run's remote, with the claims they close.

Episodes that end together go in one push (`Claims.finish`: the claims closed, each commit's
branch and op ref, the worker's ledger book, transcript notes and conversations, all under
`refs/gitswarm/workers/<name>/`, atomically). A push can fail three ways, each handled here:
a claim lost to another holder (`ClaimLost`: that episode is dropped, the rest pushed
again; unless the run's ledger has the episode from us, `taken_in`: our close landed with its
answer lost and the coordinator pruned the claim before we tried again); a lease on one of
our own refs found moved, which is either our own earlier push that landed with its answer
lost (`landed`: leased on and pushed again) or another process under our name (`NameInUse`:
the worker ends, its claims left to expire); any other failure, tried again `PUSH_TRIES`
times. Then an unreachable remote leaves the batch's claims to expire and run again (the
worker goes on while `Outage` allows); a remote that answers and refuses makes the worker
release every claim it holds (so other workers run those episodes at once) and end
(`PushesFailing`), rather than hold episodes it cannot deliver.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gitswarm.core.events import Event
from gitswarm.core.remote_events import ClaimsLost, ClaimsReleased, PushAbandoned, Pushed, PushFailed, PushRefused
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.memory import books, write
from gitswarm.memory.conversations import CONVERSATIONS_REF
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.repo import NOTES_REF, TRANSCRIPTS, Memory
from gitswarm.remote import layout
from gitswarm.remote.claims import Claim, ClaimLost, Claims
from gitswarm.remote.errors import NameInUse, PushesFailing, RemoteError, StaleLease, Unreachable
from gitswarm.remote.spending import spent
from gitswarm.remote.transport import Remote, Update

PUSH_TRIES = 5
"""Pushes of one batch of results before the worker releases its claims and ends."""
LEDGER = books.ref_name("ledger")
"""The run's ledger on the remote, the coordinator's."""


@dataclass
class ResultPush:
    """Pushes a worker's finished episodes as `claims.worker`, from its run repository `memory`."""

    remote: Remote
    claims: Claims
    memory: Memory
    emit: Callable[[Event], None]
    """The worker's event log (`EventLog.emit`)."""

    def push(self, batch: list[EpisodeRecord], held: dict[str, Claim]) -> None:
        """Close `batch`'s claims (in `held`, by episode) with their results in one push. Each
        episode leaves `held` once pushed or lost (another holder closes it). Raises
        `NameInUse` when our own refs hold commits we did not push, and `PushesFailing` after
        `PUSH_TRIES` tries refused, once every claim in `held` is released (tries that found the
        remote unreachable: the batch leaves `held`, its claims to expire)."""
        last: RemoteError | None = None
        for attempt in range(PUSH_TRIES):
            if not batch:
                return
            try:
                self.claims.finish([held[r.episode] for r in batch], self.updates(batch),
                                   {r.episode: spent(r) for r in batch})
            except ClaimLost as exc:
                lost = {c.episode for c in exc.lost}
                landed = self.taken_in(lost)
                if landed:
                    self.emit(Pushed(worker=self.claims.worker, episodes=sorted(landed),
                                     detail="its answer was lost; the run's ledger has it"))
                if lost - landed:
                    self.emit(ClaimsLost(worker=self.claims.worker, episodes=sorted(lost - landed), detail=str(exc)))
                batch = [r for r in batch if r.episode not in lost]
                for episode in lost:
                    held.pop(episode, None)
                continue
            except RemoteError as exc:
                last = exc
                stale = exc.stale if isinstance(exc, StaleLease) else ()
                if stale and not any(layout.CLAIMS in s for s in stale) and not self.landed(stale):
                    raise self._name_in_use(exc, stale, batch) from None
                self.emit(PushFailed(worker=self.claims.worker, episodes=[r.episode for r in batch], detail=str(exc)))
                time.sleep(min(0.2 * 2 ** attempt, 5))
                continue
            for r in batch:
                held.pop(r.episode, None)
            self.emit(Pushed(worker=self.claims.worker, episodes=[r.episode for r in batch]))
            return
        if not batch:
            return
        self.emit(PushAbandoned(worker=self.claims.worker, episodes=[r.episode for r in batch]))
        if not isinstance(last, Unreachable):
            raise self._failing(batch, held, last)
        for r in batch:  # an outage, which `Outage` bounds: the claims expire and run again
            held.pop(r.episode, None)

    def _failing(self, batch: list[EpisodeRecord], held: dict[str, Claim], last: RemoteError | None) -> PushesFailing:
        """Every try of `batch` failed: release every claim we hold (the batch's and those of the
        episodes still running), so other workers run them at once rather than after their
        time to live, and end the worker with what it could not push."""
        due, released = list(held.values()), []
        held.clear()
        while due:
            try:
                released = self.claims.release(due)
                break
            except ClaimLost as exc:  # another holder has it already
                due = [c for c in due if c not in exc.lost]
            except RemoteError as exc:  # they expire in their own time
                self.emit(PushFailed(worker=self.claims.worker, episodes=sorted(c.episode for c in due),
                                     detail=str(exc)))
                break
        if released:
            self.emit(ClaimsReleased(worker=self.claims.worker, episodes=sorted(c.episode for c in released)))
        refused = ", ".join(f"{ref} {why}" for ref, why in getattr(last, "rejected", {}).items())
        detail = "; ".join(part for part in (refused, last.detail if last else "") if part)
        return PushesFailing(self.remote.shown, detail, self.claims.worker, tuple(r.episode for r in batch))

    def landed(self, refs: tuple[str, ...]) -> bool:
        """Whether the remote's values of our own `refs`, which a lease found moved, are
        commits we pushed ourselves (a push that landed while its answer was lost, as when
        the server restarts): each equal to our local ref or one of its ancestors. The mirror
        then holds them, so the next try leases on them."""
        try:
            self.remote.fetch([f"+{ref}:{ref}" for ref in refs])
        except RemoteError:
            return True  # cannot tell yet: the next try's lease asks again (the tries are bounded)
        repo = self._own_reader()
        for there in refs:
            now, named = self.remote.local(there), layout.local_ref(there)
            mine = repo.ref(named[1]) if named and named[0] == self.claims.worker else None
            if now is None or mine is None:
                return False
            if not repo.in_history(now, mine):  # not a commit of ours
                return False
        return True

    def taken_in(self, episodes: set[str]) -> set[str]:
        """Those of `episodes` the run's ledger, as the coordinator published it, has from this
        process: our close of the claim landed with its answer lost, and the coordinator took
        the episode in and pruned the claim before we tried again (so the claim is gone, not
        taken over). A done claim is never taken over, so no other holding could have closed
        it. Empty when the ledger cannot be read: then the claims count as lost, as before."""
        try:
            self.remote.fetch([f"+{LEDGER}:{layout.RUN_LEDGER}"])
        except RemoteError:
            return set()
        mirror, book = self.remote.gitdir(), layout.RUN_LEDGER.removeprefix("refs/gitswarm/")
        found = {e: mirror.record(book, f"episodes/{e[:4]}/{e}.json") for e in episodes}
        return {e for e, record in found.items()
                if isinstance(record, dict) and record.get("process") == self.claims.worker}

    def _name_in_use(self, exc: RemoteError, stale: tuple[str, ...], batch: list[EpisodeRecord]) -> NameInUse:
        """Our own refs moved to commits we did not push: another process runs under our name."""
        error = NameInUse(self.remote.shown, exc.detail, self.claims.worker, stale)
        self.emit(PushRefused(worker=self.claims.worker, episodes=[r.episode for r in batch], refs=list(error.refs),
                              detail=str(error)))
        return error

    def updates(self, batch: list[EpisodeRecord]) -> list[Update]:
        """The pushes of a batch's results: each commit's branch and op ref, then the worker's
        ledger book, transcript notes, transcripts book (episodes without a commit) and the lossless
        conversations book (`engine.conversation`), each leased on what the remote had from us."""
        repo = self._own_reader()
        local = []
        for r in batch:
            if r.commit:
                op = getattr(repo.info(r.commit).meta, "op", "") or f"{r.episode}-final"
                local += [write.branch_ref(r.episode), write.op_ref(op)]
        local += ["refs/gitswarm/ledger", NOTES_REF, books.ref_name(TRANSCRIPTS), CONVERSATIONS_REF]
        updates = []
        for ref in local:
            found = repo.ref(ref)
            if found is None:
                continue
            there = layout.worker_ref(self.claims.worker, ref)
            old = self.remote.local(there)
            if old != found:
                updates.append(Update(there, found, old))
        return updates

    def _own_reader(self) -> GitReader:
        """The run's repository opened for this thread alone: the pushes run beside the git
        thread, and libgit2 lets a repository object be used by one thread at a time."""
        return GitReader(self.memory.path)
