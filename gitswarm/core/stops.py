"""Why a run stopped: a named reason and the message shown to the user.

The CLI turns the reason, never the message, into an exit code (`gitswarm.cli.common.STOP_EXIT`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class StopReason(StrEnum):
    """What ended a run; the value is what `run_stopped` events and `--json` carry."""

    BUDGET = "budget"
    """The budget of charged episodes is spent."""
    EPISODE_CAP = "episode_cap"
    """The cap on episodes of any outcome (charged or not) is reached."""
    SETTLED = "settled"
    """Every problem is settled: its leader is verified (K `pass` reviews, no `critical`;
    any leader when K is 0) and has the rule's `settle_nominations` nominations
    (`domain.selection.settled`)."""
    NO_PROGRESS = "no_progress"
    """Every open problem is set aside: its last episodes all abstained or failed."""
    TOKEN_CAP = "token_cap"
    """The run's token cap (`max_total_tokens`) is reached."""
    USD_CAP = "usd_cap"
    """The run's USD cap (`max_usd`) is reached."""
    TIME_LIMIT = "time_limit"
    """The run's time limit is reached."""
    USER = "user"
    """Stopped by the user (Ctrl-C, `q` in the dashboard)."""
    PROVIDER_FAILING = "provider_failing"
    """Episode after episode ended on a failed model call: the provider keeps failing."""
    ENGINE_ERRORS = "engine_errors"
    """Episode after episode ended by an unexpected error inside gitswarm (a bug): the circuit
    breaker, with the run's log named."""
    MODEL_FATAL = "model_fatal"
    """A model error no retry can fix: authentication, an unknown model, no quota, ..."""
    NO_WORKERS = "no_workers"
    """A run on a git remote: no worker process held or closed a claim for the coordinator's
    patience (`solve --patience`), so the run could not go on."""
    REMOTE_MOVED = "remote_moved"
    """A run on a git remote: someone else moved one of the coordinator's refs there (its main,
    say), and the coordinator will not overwrite it."""


@dataclass(frozen=True)
class Stop:
    """A run's end: why (`reason`), and the message shown to the user (`detail`)."""

    reason: StopReason
    detail: str

    def __str__(self) -> str:
        return self.detail

    def as_event(self) -> dict[str, str]:
        """The fields a `run_stopped` event carries."""
        return {"reason": self.reason.value, "detail": self.detail}
