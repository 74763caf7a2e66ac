"""Claiming episodes on the remote: one worker per episode, with no service but git's ref updates.

A claim is the ref `refs/gitswarm/claims/<episode>`, pointing to a claim commit whose
`claim.json` says who holds the episode, for which problem, and until when. The ref is made
by an atomic create (exactly one of racing claimers wins), and every later move is a leased
push on the claim commit the mover read, so of several workers taking over one expired claim
exactly one wins too. Each takeover starts a new *holding* (`generation` + 1; its `op`,
`claim-<episode>-<generation>`, is what the holding's results are known by); renewals and
the close keep it. The claim commits form a chain, so `git log refs/gitswarm/claims/<episode>`
is the episode's claim history.

A holder closes its claim with `finish`, in the same atomic push as its results: a holder
whose claim was taken over meanwhile gets `ClaimLost` and none of its refs are pushed, so a
late result is never mistaken for the episode's. Expiry is judged by the taker's clock:
the time to live should be far above the clock skew between machines.

A push can land with its answer lost (the server or the connection went down after the
update). Such claim commits are remembered (`_unconfirmed`): claiming, taking over,
renewing or finishing again finds the remote at our own commit and goes on from it, instead
of taking our own claim for someone else's. `claim_next` leaves a batch lost that way to
expire.

Numbers come from the run's high-water mark (`highwater.py`), moved by every push that
creates a claim, not from the claims themselves: the coordinator deletes the claims of
episodes it is done with (`prune.py`), and a number at or below the mark whose claim is gone
is never claimed again (`ClaimPruned`), so no number is handed out twice.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from gitswarm.memory import commitmeta
from gitswarm.memory.model import check_name
from gitswarm.remote import highwater, layout
from gitswarm.remote.claimcommit import FILE, Claim, ClaimGivenUp, ClaimHeld, ClaimLost, ClaimPruned, Spent, load, when
from gitswarm.remote.errors import MissingRef, PushRejected, RemoteError, StaleLease
from gitswarm.remote.transport import Remote, Update

__all__ = ["Claim", "ClaimGivenUp", "ClaimHeld", "ClaimLost", "ClaimPruned", "Claims", "Spent"]


class Claims:
    """Claim, renew, take over and close episodes on `remote` as worker `worker`.

    `ttl_s` is how long a claim holds without renewal; `clock` is the wall clock (seconds
    since the epoch), replaceable so that tests can move time."""

    def __init__(self, remote: Remote, worker: str, *, ttl_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.remote = remote
        self.worker = check_name("worker", worker)
        self.ttl_s = ttl_s
        self.clock = clock
        self._mark: highwater.Mark | None = None  # the high-water mark as last seen
        self._unconfirmed: set[str] = set()  # claim commits pushed without an answer
        self._loaded: dict[str, Claim] = {}  # claim commit -> its claim, as `all` last read them

    # -- reads ------------------------------------------------------------------------------

    def read(self, episode: str) -> Claim | None:
        """The episode's claim as the remote has it now, or None if it is unclaimed."""
        ref = layout.claim_ref(episode)
        try:
            self.remote.fetch([f"+{ref}:{ref}"])
        except MissingRef:
            return None
        return load(self.remote.gitdir(), self.remote.local(ref))

    def all(self) -> dict[str, Claim]:
        """Every claim on the remote, by episode (one fetch). Each claim commit is read once
        and remembered: a long run has many claims, nearly all closed for good, and reading
        them all at every look cost more than the fetch (`scripts/bench_looks.py`)."""
        self.remote.fetch([layout.claims_refspec(), layout.high_water_refspec(), layout.people_refspec()],
                          prune=True)  # people's contributions ride along: the coordinator takes them in
        repo = self.remote.gitdir()
        found, loaded = {}, {}
        for name in repo.refs(layout.CLAIMS):  # not every ref: the mirror's grow per episode
            commit = repo.ref(name)
            if commit is not None:
                claim = self._loaded.get(commit) or load(repo, commit)
                found[name.removeprefix(layout.CLAIMS)], loaded[commit] = claim, claim
        self._loaded = loaded
        return found

    def known(self) -> dict[str, Claim]:
        """The claims as the last `all` read them, by episode (no remote call)."""
        return {claim.episode: claim for claim in self._loaded.values()}

    # -- moves ------------------------------------------------------------------------------

    def claim(self, episode: str, problem: str) -> Claim:
        """Hold `episode`: create its claim (raising the high-water mark to it), or take over an
        expired one. Raises `ClaimHeld`, or `ClaimPruned` for a number whose claim was pruned."""
        number, mark = highwater.number_of(episode), None
        if number:
            mark = highwater.read(self.remote)
            if number <= mark.number:
                holder = self.read(episode)
                if holder is None:
                    raise ClaimPruned(episode)
                return holder if holder.id in self._unconfirmed else self.take_over(holder)
        now = self.clock()
        ours = Claim(episode, self.worker, check_name("problem", problem), 1, now, now + self.ttl_s)
        move = self._write(ours, None, "claim")
        try:
            done = self._push([move], mark.raised(number, move[0].id) if mark is not None else ())[0]
        except StaleLease:
            holder = self.read(episode)
        else:
            if mark is not None:
                self._mark = highwater.Mark(number, {highwater.ref_of(number): done.id})
            return done
        if holder is None:  # the mark moved meanwhile: read it again (the number may be taken now)
            return self.claim(episode, problem)
        if holder.id in self._unconfirmed:
            return holder  # our earlier push landed; only its answer was lost
        return self.take_over(holder)

    def take_over(self, holder: Claim) -> Claim:
        """A new holding of `holder`'s episode, if `holder` has expired; exactly one of several
        takers of the same claim wins, the others get `ClaimHeld` with the winner. A holding
        read through another mirror is read again here first (its commit is the parent). A
        claim pruned meanwhile raises `ClaimPruned` (through `claim`: it is never made again)."""
        if holder.id not in self.remote.gitdir():
            current = self.read(holder.episode)
            if current is None:
                return self.claim(holder.episode, holder.problem)
            holder = current
        now = self.clock()
        if holder.given_up(now):
            raise ClaimGivenUp(holder)
        if not holder.expired(now):
            raise ClaimHeld(holder)
        ours = replace(holder, worker=self.worker, generation=holder.generation + 1, claimed=now,
                       expires=now + self.ttl_s, tokens=0, usd=0.0)
        try:
            return self._push([self._write(ours, holder, "take over")])[0]
        except StaleLease:
            current = self.read(holder.episode)
        if current is None:
            return self.claim(holder.episode, holder.problem)
        if current.id in self._unconfirmed:
            return current
        raise ClaimHeld(current)

    def claim_next(self, problems: Sequence[str], cap: int) -> list[Claim]:
        """Claim one new episode for each of `problems`, numbered above the run's high-water
        mark (`e00001`, ... as `Ledger.new_id` names them) and at most `cap`, in one atomic
        push that raises the mark; fewer near the cap, none once it is reached. Racing
        claimers get distinct episodes, and all of them together at most `cap`: the run's
        episode cap holds across workers, and no number is ever handed out twice.

        The mark is remembered from our last push, or from an ls-remote that listed it
        (`saw`); a lost race reads it again and claims above it."""
        while True:
            mark = self._mark if self._mark is not None else highwater.read(self.remote)
            numbers = range(mark.number + 1, min(cap, mark.number + len(problems)) + 1)
            if not numbers:
                self._mark = mark
                return []
            now = self.clock()
            moves = [self._write(Claim(_episode(n), self.worker, check_name("problem", p), 1, now, now + self.ttl_s),
                                 None, "claim") for n, p in zip(numbers, problems, strict=False)]
            try:
                claims = self._push(moves, mark.raised(numbers[-1], moves[-1][0].id))
            except StaleLease as exc:  # the mark moved, or a claim above it exists (an older run's)
                fresh = highwater.read(self.remote)
                floor = max((highwater.number_of(r) for r in exc.stale if r.startswith(layout.CLAIMS)), default=0)
                self._mark = highwater.Mark(max(fresh.number, floor), fresh.refs)
                continue
            except RemoteError:
                self._mark = None  # it may have moved with our push: read it again
                raise
            self._mark = highwater.Mark(numbers[-1], {highwater.ref_of(numbers[-1]): claims[-1].id})
            return claims

    def saw(self, refs: dict[str, str]) -> None:
        """Take the high-water mark from an ls-remote made for something else (a worker's
        look at main and the stop), so a batch claimed after another process's is numbered
        above it at once, without a failed push and a second look."""
        found = highwater.of_refs(refs)
        if found is not None and (self._mark is None or found.number >= self._mark.number):
            self._mark = found

    def renew(self, claims: Sequence[Claim], spent: Spent | None = None) -> list[Claim]:
        """Extend our holdings `claims` by `ttl_s` from now, in one push, each reporting what
        it has spent (`spent`: episode → (tokens, usd)); `ClaimLost` if any was taken over."""
        expires, spent = self.clock() + self.ttl_s, spent or {}
        return self._held(claims, lambda c: _spent(replace(c, expires=expires), spent), "renew")

    def finish(self, claims: Sequence[Claim], updates: Sequence[Update] = (),
               spent: Spent | None = None) -> list[Claim]:
        """Close our holdings `claims` and push `updates` (our results) in one atomic push,
        each claim with what its episode spent in the end (`spent`, as for `renew`).

        Several episodes' results batch into one push. If any holding was taken over, nothing
        is pushed and `ClaimLost` names every lost one, so the caller may push the rest again.
        After a transport error, call it again with the same updates."""
        spent = spent or {}
        return self._held(claims, lambda c: _spent(replace(c, done=True), spent), "done", updates)

    def release(self, claims: Sequence[Claim]) -> list[Claim]:
        """Give up our holdings `claims` now, in one push: each expires at once, so another
        worker takes it over without waiting out its time to live. `ClaimLost` as for `renew`."""
        now = self.clock()
        return self._held(claims, lambda c: replace(c, expires=now), "release")

    # -- parts ------------------------------------------------------------------------------

    def _held(self, claims: Sequence[Claim], change: Callable[[Claim], Claim], verb: str,
              extra: Sequence[Update] = ()) -> list[Claim]:
        """Move each of our holdings `claims` to `change(claim)`, with `extra`, in one push.

        A claim found at a commit we pushed whose answer was lost is still ours: the move
        is made again from there (an earlier atomic push with it landed whole)."""
        claims = list(claims)
        while True:
            try:
                return self._push([self._write(change(c), c, verb) for c in claims], extra)
            except StaleLease as exc:
                stale = [i for i, c in enumerate(claims) if layout.claim_ref(c.episode) in exc.stale]
                if not stale:
                    raise  # a lease on one of `extra` failed: not a claim's business
                current = {i: self.read(claims[i].episode) for i in stale}
                ours = {i: now for i, now in current.items() if now is not None and now.id in self._unconfirmed}
                lost = [claims[i] for i in current if i not in ours]
                if lost:
                    raise ClaimLost(lost) from None
                for i, now in ours.items():
                    self._unconfirmed.discard(now.id)
                    claims[i] = now

    def _push(self, moves: list[tuple[Claim, Update]], extra: Sequence[Update] = ()) -> list[Claim]:
        try:
            self.remote.push([u for _, u in moves] + list(extra))
        except PushRejected:
            raise
        except RemoteError:  # the push may have landed with only its answer lost
            self._unconfirmed.update(c.id for c, _ in moves)
            raise
        return [c for c, _ in moves]

    def _write(self, claim: Claim, before: Claim | None, verb: str) -> tuple[Claim, Update]:
        """Write the claim commit for `claim` on top of `before`'s; return it and its push."""
        claim = replace(claim, nonce=secrets.token_hex(8), id="")
        data = json.dumps(claim.record(), sort_keys=True, indent=1).encode()
        until = "done" if claim.done else f"until {when(claim.expires)}"
        note = commitmeta.ClaimNote(episode=claim.episode, worker=claim.worker, problem=claim.problem, claim=claim.op)
        message = commitmeta.encode(note, f"{verb}: {claim.episode} by {claim.worker} ({claim.op}, {until})")
        commit = self.remote.gitdir().commit({FILE: data}, message, [before.id] if before is not None else [],
                                             author=(self.worker, f"{self.worker}@gitswarm.local"),
                                             when=int(self.clock()))
        ref = layout.claim_ref(claim.episode)
        return replace(claim, id=commit), Update(ref, commit, before.id if before is not None else None)


def _spent(claim: Claim, spent: Spent) -> Claim:
    tokens, usd = spent.get(claim.episode, (claim.tokens, claim.usd))
    return replace(claim, tokens=int(tokens), usd=float(usd))


def _episode(number: int) -> str:
    return f"e{number:05d}"
