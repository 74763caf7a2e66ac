"""What a run on a remote has spent, across every worker process: how the token and USD caps
hold across machines.

A worker's calls are charged to its own ledger as they happen, and the coordinator learns of
them in two ways: a finished episode's record, taken into the run's ledger, and the figures
each open claim carries (`Claim.tokens`, `Claim.usd`: the holding's spending at its last
renewal or at its close; workers renew more often while a cap is set). The coordinator's
`Spending` is their sum, by worker process, and it judges the caps on it. It publishes the
figures in its ledger's scheduler record (`spending`), and a worker's cap check adds its own
live figures to the rest of the run's (`Published.elsewhere`): every call is checked against
everything the run has reported, so a cap can be passed only by what other processes spent
since their last report, and by the calls in flight when it is reached.

A holding whose worker died never closes: its episode is taken over and run again, and what
the dead holder had reported would leave the count with its claim. The coordinator keeps it
(`abandoned`, published and restored on resume), so a worker that keeps dying cannot spend
past the caps unseen. An episode given up after its last allowed holding expired may still be
closed by that holder, slow rather than dead (nobody took it over, so its lease holds): once
taken in, its record holds what the holding spent, and the holding's abandoned share goes
(`given_up_spent`, published and restored with the rest), so it is counted once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.ledger import Ledger
from gitswarm.remote.claims import Claim

REPORT_S = 5.0
"""While a token or USD cap is set, the longest a worker leaves its open claims' spending
unreported (a claim's renewal reports it too)."""
CHECK_S = 0.25
"""While a cap is set, how often a worker asks whether a report is due."""


def spent(record: EpisodeRecord) -> tuple[int, float]:
    return record.tokens_in + record.tokens_out, record.cost_usd


@dataclass
class Spending:
    """The coordinator's count: the run's ledger (every finished episode taken in, and the
    merger's calls) plus the open claims as their holders last reported them; with each
    worker process's part."""

    finished: dict[str, list] = field(default_factory=lambda: defaultdict(lambda: [0, 0.0]))
    """Each process's finished episodes in the run's ledger: [tokens, usd]."""
    open: dict[str, list] = field(default_factory=dict)
    """Each process's open claims as last reported: [tokens, usd, held, expired] (held: not
    expired; expired: its holder stopped renewing, and may be gone)."""
    problems: dict[str, Counter] = field(default_factory=dict)
    """Each process's held claims by problem: what it is working on now."""
    abandoned: dict[str, list] = field(default_factory=lambda: defaultdict(lambda: [0, 0.0, 0]))
    """Each process's holdings that expired and were taken over: [tokens, usd] as last reported,
    spent that no ledger record will ever hold, and how many (each counts against the episode
    cap, as a local episode cut off by a crash does)."""
    holdings: dict[str, Claim] = field(default_factory=dict)
    """The open claims as last seen, by episode: a takeover shows as a later generation."""
    taken_over: list[Claim] = field(default_factory=list)
    """The holdings the last `seen` found taken over (their spending now `abandoned`)."""
    given_up: set[str] = field(default_factory=set)
    """Episodes whose last allowed holding expired (`Claim.given_up`): counted in `abandoned`
    once, and no longer among the open claims."""
    newly_given_up: list[Claim] = field(default_factory=list)
    """The holdings the last `seen` found given up."""
    given_up_spent: dict[str, list] = field(default_factory=dict)
    """Each given-up episode not taken in yet: its last holding's [worker, tokens, usd], its
    share of `abandoned`, dropped if its holder closes the claim after all and the episode
    is taken in (`took`)."""

    @classmethod
    def of(cls, records: Iterable[EpisodeRecord], published: dict | None = None) -> Spending:
        """The count of a resumed run, from its ledger's records and the count it published."""
        spending = cls()
        for record in records:
            spending.took(record)
        for name, (tokens, usd, holdings) in ((published or {}).get("abandoned") or {}).items():
            spending.abandoned[name] = [int(tokens), float(usd), int(holdings)]
        spending.given_up = {str(e) for e in (published or {}).get("given_up") or ()}
        spending.given_up_spent = {str(e): [str(worker), int(tokens), float(usd)] for e, (worker, tokens, usd)
                                   in ((published or {}).get("given_up_spent") or {}).items()}
        return spending

    def took(self, record: EpisodeRecord) -> None:
        """A finished episode is in the run's ledger now (its `process` ran it). One given up
        was closed late by its last holder: that holding's abandoned share goes, its record
        holds what it spent."""
        tokens, usd = spent(record)
        part = self.finished[record.process]
        part[0] += tokens
        part[1] += usd
        share = self.given_up_spent.pop(record.episode, None)
        if share is not None and share[0] in self.abandoned:
            lost = self.abandoned[share[0]]
            lost[0], lost[1], lost[2] = lost[0] - share[1], lost[1] - share[2], lost[2] - 1
            if lost[2] <= 0:
                del self.abandoned[share[0]]

    def seen(self, claims: Iterable[Claim], now: float) -> bool:
        """The open claims as fetched now; True if their figures changed."""
        found: dict[str, list] = defaultdict(lambda: [0, 0.0, 0, 0])
        problems: dict[str, Counter] = defaultdict(Counter)
        claims = list(claims)
        self.taken_over = [before for c in claims if (before := self.holdings.get(c.episode)) is not None
                           and c.generation > before.generation]
        self.newly_given_up = [c for c in claims if c.given_up(now) and c.episode not in self.given_up]
        for before in self.taken_over + self.newly_given_up:
            part = self.abandoned[before.worker]
            part[0] += before.tokens
            part[1] += before.usd
            part[2] += 1
        self.given_up.update(c.episode for c in self.newly_given_up)
        self.given_up_spent |= {c.episode: [c.worker, c.tokens, c.usd] for c in self.newly_given_up}
        claims = [c for c in claims if c.episode not in self.given_up]
        self.holdings = {c.episode: c for c in claims if not c.done}
        for claim in claims:
            if not claim.done:
                part = found[claim.worker]
                part[0] += claim.tokens
                part[1] += claim.usd
                part[2 + claim.expired(now)] += 1
                if not claim.expired(now):
                    problems[claim.worker][claim.problem] += 1
        changed = (dict(found) != self.open or dict(problems) != self.problems or bool(self.taken_over)
                   or bool(self.newly_given_up))
        self.open, self.problems = dict(found), dict(problems)
        return changed

    def in_flight(self) -> tuple[int, float]:
        """What the run spent that its ledger does not hold: the open claims' reports, and
        the abandoned holdings'."""
        parts = [*self.open.values(), *self.abandoned.values()]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def abandoned_holdings(self) -> int:
        return sum(p[2] for p in self.abandoned.values())

    def total(self, ledger: Ledger) -> tuple[int, float]:
        """What the run has spent: its ledger's totals and the open claims' reports."""
        tokens, usd = self.in_flight()
        return ledger.tokens + tokens, ledger.cost[0] + usd

    def record(self, ledger: Ledger) -> dict:
        """The published form: the totals, each process's part of them with its claims held
        and expired (what `status` shows of each worker process), and what abandoned holdings
        spent (in the totals, never in a process's part: a worker restarted under its name
        counts it as spent elsewhere, which may count it twice but never lets it pass unseen)."""
        processes: dict[str, dict] = {}
        for name in sorted({*self.finished, *self.open} - {""}):
            done, live = self.finished.get(name, [0, 0.0]), self.open.get(name, [0, 0.0, 0, 0])
            processes[name] = {"tokens": done[0] + live[0], "usd": done[1] + live[1], "held": live[2],
                               "expired": live[3], "problems": dict(self.problems.get(name, {}))}
        tokens, usd = self.total(ledger)
        return {"tokens": tokens, "usd": usd, "processes": processes,
                "abandoned": {name: list(part) for name, part in sorted(self.abandoned.items())},
                "given_up": sorted(self.given_up),
                "given_up_spent": {e: list(share) for e, share in sorted(self.given_up_spent.items())}}


@dataclass
class Published:
    """A worker's view of the coordinator's count, fetched with the run's ledger."""

    name: str
    """The worker process."""
    record: dict = field(default_factory=dict)

    def elsewhere(self) -> tuple[int, float]:
        """What the rest of the run has spent: the published totals less this process's part
        (its own ledger counts that part, and more recent calls too)."""
        ours = (self.record.get("processes") or {}).get(self.name) or {}
        tokens = int(self.record.get("tokens", 0)) - int(ours.get("tokens", 0))
        usd = float(self.record.get("usd", 0.0)) - float(ours.get("usd", 0.0))
        return max(tokens, 0), max(usd, 0.0)

    def busy(self) -> list[str]:
        """The problems the other processes held claims on, one entry per claim."""
        processes = self.record.get("processes") or {}
        return [str(problem) for name, part in processes.items() if name != self.name and isinstance(part, dict)
                for problem, n in (part.get("problems") or {}).items() for _ in range(int(n))]

    def expired(self) -> int:
        """Claims the coordinator counted as expired, every process's (they wait for a taker)."""
        processes = self.record.get("processes") or {}
        return sum(int(part.get("expired", 0)) for part in processes.values() if isinstance(part, dict))

    def unreported_due(self, cfg, unreported: tuple[int, float], ledger: Ledger) -> bool:
        """Whether this process's spending not yet reported has reached its share of what
        the cap leaves (what is left, split among the processes the coordinator counts):
        others then learn of it before their own spending could take the run past the cap."""
        processes = max(len(self.record.get("processes") or {}), 1)
        tokens, usd = self.elsewhere()
        if cfg.max_total_tokens is not None:
            left = cfg.max_total_tokens - tokens - ledger.tokens
            if unreported[0] >= max(left, 0) / processes:
                return True
        if cfg.max_usd is not None:
            left = cfg.max_usd - usd - ledger.cost[0]
            if unreported[1] >= max(left, 0.0) / processes:
                return True
        return False
