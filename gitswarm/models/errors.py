"""What a failed model call means: its kind, whether to try again, and how long to wait."""

from __future__ import annotations

import email.utils
import json
import random
import time
from types import ModuleType

from gitswarm.usage import Usage

RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "malformed"})
"""Kinds of failure worth another attempt; auth, bad_request, context_window and the rest are not."""
_BY_STATUS = {401: "auth", 403: "permission", 404: "not_found", 408: "timeout", 409: "server",
              429: "rate_limit"}


class ModelError(Exception):
    """A model call that failed for good: the kind of failure, and whether it was transient."""

    def __init__(self, kind: str, message: str, *, attempts: int, retry_after_s: float | None = None) -> None:
        super().__init__(f"model call failed ({kind}) after {attempts} attempt(s): {message}")
        self.kind = kind
        """One of auth, permission, not_found, bad_request, context_window, content_policy,
        quota, rate_limit, server, timeout, connection, malformed."""
        self.message = message
        self.retryable = kind in RETRYABLE
        """The failure was transient (its retries were spent), so trying later may succeed."""
        self.attempts = attempts
        self.retry_after_s = retry_after_s
        """How long the server asked us to wait (Retry-After), when it said."""
        self.usage = Usage()
        """What the failed attempts used: every attempt is a call, and a stream cut short may
        have reported tokens the provider bills."""


def from_litellm(exc: Exception, litellm: ModuleType, attempts: int) -> ModelError:
    """The ModelError for an exception raised by `litellm.acompletion`."""
    return ModelError(failure_kind(exc, litellm), str(exc), attempts=attempts, retry_after_s=retry_after(exc))


def backoff_delay(attempt: int, base_s: float, cap_s: float, retry_after_s: float | None = None) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based): exponential with half of it
    jittered; a server's Retry-After is honoured up to `cap_s`."""
    ceiling = min(cap_s, base_s * 2 ** (attempt - 1))
    delay = ceiling / 2 + random.uniform(0, ceiling / 2)
    if retry_after_s is not None:
        delay = max(delay, min(retry_after_s, cap_s))
    return delay


def failure_kind(exc: Exception, litellm: ModuleType) -> str:
    """The kind of a failure, from litellm's exception, its causes and the provider's error code.

    litellm does not give every failure its own class (a 403 arrives as a plain APIError, a
    dropped connection or a body that is not JSON as InternalServerError), so the chain of
    causes and the status code decide.
    """
    import openai  # loaded by litellm already

    chain = _chain(exc)
    codes = {getattr(e, "code", None) for e in chain}
    if isinstance(exc, litellm.exceptions.ContextWindowExceededError) or "context_length_exceeded" in codes:
        return "context_window"
    if isinstance(exc, litellm.exceptions.ContentPolicyViolationError) or "content_policy_violation" in codes:
        return "content_policy"
    if "insufficient_quota" in codes:
        return "quota"
    if any(isinstance(e, json.JSONDecodeError) for e in chain):
        return "malformed"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if any(isinstance(e, openai.APIConnectionError) for e in chain):
        return "connection"
    if any(type(e) is openai.OpenAIError for e in chain):  # the SDK refused before sending anything
        return "auth" if "credential" in str(exc).lower() else "bad_request"
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return "bad_request"
    return _BY_STATUS.get(status) or ("server" if status >= 500 else "bad_request")


def retry_after(exc: Exception) -> float | None:
    """Seconds from the retry-after-ms or Retry-After header of the failed response, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None) or {}
    headers = {str(k).lower(): str(v) for k, v in dict(headers).items()}
    if "retry-after-ms" in headers:
        millis = _seconds(headers["retry-after-ms"])
        return None if millis is None else millis / 1000
    return _seconds(headers["retry-after"]) if "retry-after" in headers else None


def _seconds(value: str) -> float | None:
    """A Retry-After value: a number of seconds, or an HTTP date."""
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_tz(value)
        return max(0.0, email.utils.mktime_tz(when) - time.time()) if when else None


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen
