"""The no-progress rule: a problem whose last N episodes all abstained or failed is set aside.

The state is derived from the ledger's episode records, in the order the episodes ended, so
a resumed run sets aside exactly the problems the run before it had set aside (and a larger
N gives them another chance).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from gitswarm.core.status import CHARGED, UNCHARGED
from gitswarm.core.stops import Stop, StopReason
from gitswarm.domain.episode import EpisodeRecord, Failure

"""Outcomes that make no progress. A `stopped` episode (cut short by a cap or a crash) says
nothing about its problem and leaves its streak as it was; nor does an episode failed by the
provider or by an engine error (`engine.failures`): the model's own failures count."""
NOT_THE_PROBLEMS = (Failure.PROVIDER, Failure.ENGINE)


@dataclass
class Streaks:
    """Each problem's trailing run of uncharged episodes: (status, note), oldest first."""

    limit: int
    """N: uncharged episodes in a row that set a problem aside."""
    runs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    @classmethod
    def from_records(cls, limit: int, records: Iterable[EpisodeRecord]) -> Streaks:
        """The streaks a run's finished episodes leave, taken in the order they ended."""
        streaks = cls(limit)
        finished = [r for r in records if r.episode != "merger" and r.status != "running"]
        for record in sorted(finished, key=lambda r: (r.ended or r.started, r.episode)):
            streaks.add(record)
        return streaks

    def add(self, record: EpisodeRecord) -> bool:
        """Take a finished episode into its problem's streak; True if that set the problem aside."""
        if record.status in CHARGED:
            self.runs.pop(record.problem, None)
            return False
        if record.status not in UNCHARGED or record.failure in NOT_THE_PROBLEMS:
            return False
        run = self.runs.setdefault(record.problem, [])
        before = len(run) >= self.limit
        run.append((record.status, record.note))
        del run[:-self.limit]
        return not before and len(run) >= self.limit

    @property
    def set_aside(self) -> set[str]:
        """Problems the scheduler picks no more."""
        return {p for p, run in self.runs.items() if len(run) >= self.limit}

    def describe(self, problem: str) -> str:
        """How the problem's last episodes ended: `4 abstained (last: "...")`."""
        run = self.runs.get(problem, [])
        counts = Counter(status for status, _ in run)
        said = ", ".join(f"{n} {'abstained' if s == 'abstain' else s}" for s, n in sorted(counts.items()))
        last = " ".join((run[-1][1] if run else "").split())
        return f"{said} (last: {_clip(last, 120)!r})" if last else said

    def no_progress(self, aside: list[str], cause: str = "") -> Stop:
        """The stop when every open problem (`aside`) is set aside: which ones, how their last
        episodes ended, and the `cause` when the caller knows one the problems do not show."""
        shown = "; ".join(f"{p}: {self.describe(p)}" for p in aside[:6])
        more = f"; and {len(aside) - 6} more" if len(aside) > 6 else ""
        fix = cause or "a larger --no-progress or another --model gives them another chance"
        return Stop(StopReason.NO_PROGRESS,
                    f"no progress: every open problem is set aside after {self.limit} "
                    f"episodes in a row that abstained or failed ({shown}{more}); {fix}")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
