"""Why an episode failed, in four classes, each with its own rule.

- `provider`: the model could not be reached or did not answer whole (transport errors, 5xx,
  streams cut or empty, timeouts, rate limits its retries did not outlast). Only these count
  toward stopping the run as `provider_failing`.
- `model`: the model answered, but the episode went nowhere (the step limit, replies without
  a tool call, the wall clock). These feed the no-progress rule, as abstentions do.
- `context`: the conversation outgrew the model's context window (the provider said so). The
  context policy (`engine.window`) is there so that it does not happen; where it does, the
  window it assumed is wrong (`context_window`) or `compact_at` too high. Counted as `model` is,
  never as the provider's or the engine's.
- `engine`: an unexpected exception inside the episode, a bug of gitswarm's. The episode
  fails alone, its traceback goes to the run's log, and only several in a row stop the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitswarm.core.status import Status
from gitswarm.core.stops import Stop, StopReason
from gitswarm.domain.episode import Failure

FATAL_KINDS = frozenset({"auth", "permission", "not_found", "bad_request", "quota"})
"""Model failures that every later call would meet too: they stop the run at once."""
PROVIDER_KINDS = frozenset({"rate_limit", "server", "timeout", "connection", "malformed", "stream_cut"})
"""Model failures that are the provider's: it did not answer, or not whole."""
ENGINE_ERRORS_IN_ROW = 3
"""Episodes in a row ended by an engine error that stop the run (the circuit breaker)."""


def of_model_error(kind: str) -> Failure:
    """The class of an episode ended by a failed model call of this `ModelError.kind`: a
    context window exceeded is its own class; a content policy is this episode's conversation,
    not the provider's failing."""
    if kind == "context_window":
        return Failure.CONTEXT
    return Failure.PROVIDER if kind in PROVIDER_KINDS or kind in FATAL_KINDS else Failure.MODEL


@dataclass
class Breakers:
    """The run's two failure streaks: episodes in a row that failed by the provider, and by
    an engine error. Any other ending breaks both."""

    provider_limit: int
    """Provider failures in a row that stop the run."""
    provider_in_row: int = 0
    engine_in_row: int = 0
    last_provider_error: str = ""
    log: str = ""
    """Where engine errors' tracebacks are, for the stop's message."""

    def add(self, status: str, failure: str, note: str) -> None:
        """Take a finished episode into the streaks."""
        provider = status == Status.FAILED and failure == Failure.PROVIDER
        engine = status == Status.FAILED and failure == Failure.ENGINE
        self.provider_in_row = self.provider_in_row + 1 if provider else 0
        self.engine_in_row = self.engine_in_row + 1 if engine else 0
        if provider:
            self.last_provider_error = note

    def stop(self) -> Stop | None:
        """The stop a streak calls for, or None."""
        if self.provider_in_row >= self.provider_limit:
            return Stop(StopReason.PROVIDER_FAILING,
                        f"{self.provider_in_row} episodes in a row failed because the model provider did not "
                        f"answer; the last error: {_clip(self.last_provider_error, 400)}. Check that the "
                        "provider (or --api-base) is reachable and serving the model (`gitswarm doctor` with "
                        "the same options checks it), then run the same command again to resume")
        if self.engine_in_row >= ENGINE_ERRORS_IN_ROW:
            return Stop(StopReason.ENGINE_ERRORS,
                        f"{self.engine_in_row} episodes in a row ended by an unexpected error inside gitswarm, "
                        f"so the run stopped rather than spend more on a fault that repeats. The tracebacks "
                        f"are in {self.log}; please report them with that file. Everything committed is "
                        "kept: the same command resumes the run")
        return None


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
