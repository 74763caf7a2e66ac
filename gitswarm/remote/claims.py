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
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace

import pygit2
from pygit2.enums import FileMode

from gitswarm.memory.model import check_name
from gitswarm.memory.trailers import Message
from gitswarm.memory.write import COMMITTER
from gitswarm.remote import layout
from gitswarm.remote.errors import MissingRef, PushRejected, RemoteError, StaleLease
from gitswarm.remote.transport import Remote, Update

FILE = "claim.json"
Spent = dict[str, tuple[int, float]]
"""What episodes have spent, by episode: (tokens, USD)."""


@dataclass(frozen=True)
class Claim:
    """One claim commit: who holds `episode` (for `problem`), since when, until when."""

    episode: str
    worker: str
    problem: str
    generation: int
    """1 for the first holding, +1 for each takeover."""
    claimed: float
    """When this holding began (renewals keep it)."""
    expires: float
    done: bool = False
    """Closed by its holder with the results: never expires, cannot be taken over."""
    tokens: int = 0
    """What this holding had spent at its last renewal or close (`remote.spending`)."""
    usd: float = 0.0
    nonce: str = ""
    """Makes every claim commit distinct, so two claimers never push the same commit."""
    id: str = ""
    """The claim commit: the value a leased push on the claim ref expects."""

    @property
    def op(self) -> str:
        """The holding's operation id, the same across its renewals and its close."""
        return f"claim-{self.episode}-{self.generation}"

    def expired(self, now: float) -> bool:
        return not self.done and now >= self.expires

    def record(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "id"}


_FIELDS = frozenset(f.name for f in fields(Claim)) - {"id"}


class ClaimHeld(Exception):
    """The episode is claimed by another holding that has not expired (or is done)."""

    def __init__(self, holder: Claim) -> None:
        self.holder = holder
        until = "done" if holder.done else f"until {_when(holder.expires)}"
        super().__init__(f"{holder.episode} is claimed by {holder.worker} ({holder.op}, {until})")


class ClaimLost(Exception):
    """Our holdings `lost` were taken over (or closed) by someone else; nothing was pushed."""

    def __init__(self, lost: Sequence[Claim]) -> None:
        self.lost = tuple(lost)
        names = ", ".join(f"{c.op} of {c.worker}" for c in self.lost)
        super().__init__(f"claim taken over by another worker: {names}; its results are late")


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
        self._highest: int | None = None  # the highest episode number seen claimed
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
        return _load(self.remote.repo(), self.remote.local(ref))

    def all(self) -> dict[str, Claim]:
        """Every claim on the remote, by episode (one fetch). Each claim commit is read once
        and remembered: a long run has many claims, nearly all closed for good, and reading
        them all at every look cost more than the fetch (`scripts/bench_looks.py`)."""
        self.remote.fetch([layout.claims_refspec()], prune=True)
        repo = self.remote.repo()
        found, loaded = {}, {}
        for name in repo.references:
            episode = layout.episode_of(name)
            if episode is not None:
                commit = str(repo.references[name].target)
                claim = self._loaded.get(commit) or _load(repo, commit)
                found[episode], loaded[commit] = claim, claim
        self._loaded = loaded
        return found

    # -- moves ------------------------------------------------------------------------------

    def claim(self, episode: str, problem: str) -> Claim:
        """Hold `episode`: create its claim, or take over an expired one. Raises `ClaimHeld`."""
        now = self.clock()
        ours = Claim(episode, self.worker, check_name("problem", problem), 1, now, now + self.ttl_s)
        try:
            return self._push([self._write(ours, None, "claim")])[0]
        except StaleLease:
            holder = self.read(episode)
        if holder is None:  # deleted meanwhile (only the coordinator deletes claims)
            return self.claim(episode, problem)
        if holder.id in self._unconfirmed:
            return holder  # our earlier push landed; only its answer was lost
        return self.take_over(holder)

    def take_over(self, holder: Claim) -> Claim:
        """A new holding of `holder`'s episode, if `holder` has expired; exactly one of several
        takers of the same claim wins, the others get `ClaimHeld` with the winner. A holding
        read through another mirror is read again here first (its commit is the parent)."""
        if holder.id not in self.remote.repo():
            current = self.read(holder.episode)
            if current is None:
                return self.claim(holder.episode, holder.problem)
            holder = current
        now = self.clock()
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
        """Claim one new episode for each of `problems`, numbered above every claim seen
        (`e00001`, ... as `Ledger.new_id` names them) and at most `cap`, in one atomic push;
        fewer near the cap, none once it is reached. Racing claimers get distinct episodes,
        and all of them together at most `cap`: the run's episode cap holds across workers.

        The highest number is read from the remote once and then remembered; a lost race
        reads it again and tries the numbers still free with new ones above."""
        if self._highest is None:
            self._highest = self._highest_claimed()
        want: list[int] = []
        while True:
            top = max([self._highest, *want])
            want += range(top + 1, min(cap, top + len(problems) - len(want)) + 1)
            if not want:
                return []
            now = self.clock()
            ours = [Claim(_episode(n), self.worker, check_name("problem", p), 1, now, now + self.ttl_s)
                    for n, p in zip(want, problems, strict=False)]
            try:
                claims = self._push([self._write(c, None, "claim") for c in ours])
            except StaleLease as exc:
                want = [n for n in want if layout.claim_ref(_episode(n)) not in exc.stale]
                self._highest = max(self._highest, self._highest_claimed())
                continue
            self._highest = max([self._highest, *want])
            return claims

    def _highest_claimed(self) -> int:
        return max(map(_number, self.remote.refs(f"{layout.CLAIMS}*")), default=0)

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
                lost = [claims[i] for i, now in current.items() if now is None or now.id not in self._unconfirmed]
                if lost:
                    raise ClaimLost(lost) from None
                for i, now in current.items():
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
        repo = self.remote.repo()
        blob = repo.create_blob(json.dumps(claim.record(), sort_keys=True, indent=1).encode())
        builder = repo.TreeBuilder()
        builder.insert(FILE, blob, FileMode.BLOB)
        stamp = int(self.clock())
        author = pygit2.Signature(self.worker, f"{self.worker}@gitswarm.local", stamp, 0)
        committer = pygit2.Signature(*COMMITTER, stamp, 0)
        until = "done" if claim.done else f"until {_when(claim.expires)}"
        message = Message(f"{verb}: {claim.episode} by {claim.worker} ({claim.op}, {until})", "", {
            "Episode": claim.episode, "Worker": claim.worker, "Problem": claim.problem,
            "Claim": claim.op}).render()
        parents = [pygit2.Oid(hex=before.id)] if before is not None else []
        commit = str(repo.create_commit(None, author, committer, message, builder.write(), parents))
        ref = layout.claim_ref(claim.episode)
        return replace(claim, id=commit), Update(ref, commit, before.id if before is not None else None)


def _spent(claim: Claim, spent: Spent) -> Claim:
    tokens, usd = spent.get(claim.episode, (claim.tokens, claim.usd))
    return replace(claim, tokens=int(tokens), usd=float(usd))


def _load(repo: pygit2.Repository, commit: str | None) -> Claim | None:
    if commit is None:
        return None
    data = json.loads(repo[repo[commit].peel(pygit2.Commit).tree[FILE].id].data)
    return Claim(**{k: v for k, v in data.items() if k in _FIELDS}, id=commit)


def _episode(number: int) -> str:
    return f"e{number:05d}"


def _number(ref: str) -> int:
    """The number of a claim ref's episode (`e00042` → 42); 0 for another name."""
    episode = layout.episode_of(ref) or ""
    return int(episode[1:]) if episode[:1] == "e" and episode[1:].isdigit() else 0


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))
