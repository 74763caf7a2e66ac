"""A claim commit's content: `Claim` (its `claim.json`), read back by `load`, and the errors a
claim move raises. `claims.Claims` writes and moves them; this is what any reader of a claim
(the coordinator, `spending`, `intake`) needs of one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import overload

from gitswarm.memory.gitdir import GitReader

FILE = "claim.json"
HOLDINGS = 3
"""Holdings of one episode at most: once the last expires too (a worker died running it, three
times), the episode is given up rather than run again, so an episode that kills its worker
cannot do so for ever, spending each time."""
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

    def given_up(self, now: float) -> bool:
        """Expired at its last allowed holding: nobody takes it over (`HOLDINGS`)."""
        return self.expired(now) and self.generation >= HOLDINGS

    def record(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "id"}


_FIELDS = frozenset(f.name for f in fields(Claim)) - {"id"}


class ClaimHeld(Exception):
    """The episode is claimed by another holding that has not expired (or is done)."""

    def __init__(self, holder: Claim) -> None:
        self.holder = holder
        super().__init__(self._describe(holder))

    @staticmethod
    def _describe(holder: Claim) -> str:
        until = "done" if holder.done else f"until {when(holder.expires)}"
        return f"{holder.episode} is claimed by {holder.worker} ({holder.op}, {until})"


class ClaimGivenUp(ClaimHeld):
    """The episode's last allowed holding expired: it is given up, never taken over again."""

    @staticmethod
    def _describe(holder: Claim) -> str:
        return (f"{holder.episode} is given up: its {holder.generation} holdings all expired "
                f"(the last by {holder.worker})")


class ClaimLost(Exception):
    """Our holdings `lost` were taken over (or closed) by someone else; nothing was pushed."""

    def __init__(self, lost: Sequence[Claim]) -> None:
        self.lost = tuple(lost)
        names = ", ".join(f"{c.op} of {c.worker}" for c in self.lost)
        super().__init__(f"claim taken over by another worker: {names}; its results are late")


class ClaimPruned(Exception):
    """The episode's number is at or below the run's high-water mark and it has no claim: it
    ran and its claim was pruned (or the number was skipped). It is never claimed again."""

    def __init__(self, episode: str) -> None:
        self.episode = episode
        super().__init__(f"{episode} was claimed before and its claim is gone (pruned): it is not claimed again")


@overload
def load(repo: GitReader, commit: str) -> Claim: ...
@overload
def load(repo: GitReader, commit: str | None) -> Claim | None: ...
def load(repo: GitReader, commit: str | None) -> Claim | None:
    if commit is None:
        return None
    text = repo.file(commit, FILE)
    if text is None:
        raise KeyError(f"{commit} holds no {FILE}: not a claim commit")
    data = json.loads(text)
    return Claim(**{k: v for k, v in data.items() if k in _FIELDS}, id=commit)


def when(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))
