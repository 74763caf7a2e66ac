"""What a failed model call means: its kind, whether to try again, and how long to wait."""

from __future__ import annotations

import email.utils
import json
import random
import time
from dataclasses import dataclass
from types import ModuleType

from gitswarm.errors import EnvironmentFault
from gitswarm.usage import Usage

RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "malformed", "stream_cut"})
"""Kinds of failure worth another attempt; auth, bad_request, context_window and the rest are not."""
_STREAM_ENDED = "Stream ended before a finish_reason"
"""litellm's words when an OpenAI-style stream ends cleanly with no finish_reason."""
_WHAT = {"rate_limit": "rate-limited", "timeout": "no reply in time", "connection": "could not connect",
         "malformed": "the reply could not be read", "stream_cut": "the server ended the reply early"}
_TO_DO = {
    "stream_cut": "a local server that interrupts concurrent requests does this (start llama-cpp-python's server "
                  "with --interrupt_requests False, give llama-server --parallel N, or run with --workers 1)",
    "server": "the server is failing: check its log, or try again later",
    "rate_limit": "the provider limits requests or tokens per minute: run with fewer --workers, or wait and resume",
    "timeout": "is the server still working? A slow local model may need a larger --reply-timeout "
               "(or --idle-timeout, for a model that thinks long before it writes)",
    "connection": "no reply came, so no server had its say: check the network and the host's name, and with "
                  "--api-base its scheme, host and port, and that the server is running",
    "malformed": "is --api-base an OpenAI-compatible endpoint (often .../v1)?",
}
TOO_LONG = ("context length exceeded: the conversation is longer than the model's context window, so this "
            "episode ends (other episodes go on). With trim_context on, give the model's true window "
            "(--context-window) or a lower --compact-at.")
_BY_STATUS = {401: "auth", 403: "permission", 404: "not_found", 408: "timeout", 409: "server",
              429: "rate_limit"}


class ModelError(EnvironmentFault):
    """A model call that failed for good: the kind of failure, and whether it was transient. The
    provider (or the server at --api-base) is the outside world: an environment fault."""

    def __init__(self, kind: str, message: str, *, attempts: int, retry_after_s: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(f"model call failed ({kind}) after {attempts} attempt(s): {message}")
        self.kind = kind
        """One of auth, permission, not_found, bad_request, context_window, content_policy,
        quota, rate_limit, server, timeout, connection, malformed, stream_cut (the server ended
        the reply before its end)."""
        self.message = message
        self.retryable = kind in RETRYABLE
        """The failure was transient (its retries were spent), so trying later may succeed."""
        self.attempts = attempts
        self.retry_after_s = retry_after_s
        """How long the server asked us to wait (Retry-After), when it said."""
        self.status = status
        """The HTTP status the server answered with, when there was one."""
        self.usage = Usage()
        """What the failed attempts used: every attempt is a call, and a stream cut short may
        have reported tokens the provider bills."""


class EmptyReply(ModelError):
    """A reply with nothing in it at all (no chunk, or no text, call or token): malformed."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__("malformed", message, attempts=attempts)


@dataclass(frozen=True)
class Retry:
    """A failed attempt about to be tried again, in words a user reads."""

    kind: str
    """The ModelError kind of the failure."""
    what: str
    """What happened, in plain words: "the server ended the reply early", "rate-limited"..."""
    attempt: int
    """The number of the failed attempt, from 1."""
    delay_s: float
    """How long the client waits before the next attempt."""


def retry_of(error: ModelError, attempt: int, delay_s: float) -> Retry:
    """The Retry to announce for a failed attempt."""
    return Retry(error.kind, what_failed(error), attempt, delay_s)


def what_failed(error: ModelError) -> str:
    """What a failure means, in plain words."""
    if error.kind == "server":
        return f"the server failed (HTTP {error.status})" if error.status else "the server failed"
    return _WHAT.get(error.kind, error.kind.replace("_", " "))


def given_up(error: ModelError, times: int) -> ModelError:
    """The error to raise once the retries of a transient failure are spent: what it means and
    what to do in plain words first, then the provider's own message."""
    plain = what_failed(error) + (f" {times} times in a row" if times > 1 else "")
    plain += f": {_TO_DO[error.kind]}" if error.kind in _TO_DO else ""
    plain += "" if plain.endswith((".", "?")) else "."
    final = ModelError(error.kind, f"{plain} Details: {error.message}", attempts=error.attempts,
                       retry_after_s=error.retry_after_s, status=error.status)
    final.usage = error.usage
    return final


def from_litellm(exc: Exception, litellm: ModuleType, attempts: int) -> ModelError:
    """The ModelError for an exception raised by `litellm.acompletion`."""
    status, kind = getattr(exc, "status_code", None), failure_kind(exc, litellm)
    message = f"{TOO_LONG} Details: {exc}" if kind == "context_window" else str(exc)
    return ModelError(kind, message, attempts=attempts, retry_after_s=retry_after(exc),
                      status=status if isinstance(status, int) else None)


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
    if _stream_cut(chain, litellm):
        return "stream_cut"
    if any(isinstance(e, json.JSONDecodeError) for e in chain):
        return "malformed"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if any(isinstance(e, openai.APIConnectionError) for e in chain) or _not_connected(chain):
        return "connection"
    if any(type(e) is openai.OpenAIError for e in chain):  # the SDK refused before sending anything
        return "auth" if "credential" in str(exc).lower() else "bad_request"
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return "bad_request"
    return _BY_STATUS.get(status) or ("server" if status >= 500 else "bad_request")


_NOT_CONNECTED = ("Cannot connect to host", "Name or service not known", "nodename nor servname",
                  "Temporary failure in name resolution", "Connection refused")
"""The words of a connection never made (DNS, a refused port), as litellm passes them on in an
error it may label HTTP 500 although no server answered."""


def _not_connected(chain: list[BaseException]) -> bool:
    """No connection was made: the transport's connect error, or its words, anywhere in the chain."""
    import socket

    import aiohttp  # litellm's transport, loaded by it already
    import httpx

    connect = (aiohttp.ClientConnectorError, httpx.ConnectError, ConnectionRefusedError, socket.gaierror)
    return any(isinstance(e, connect) or any(w in str(e) for w in _NOT_CONNECTED) for e in chain)


def _stream_cut(chain: list[BaseException], litellm: ModuleType) -> bool:
    """The server ended the reply before its end: a stream that stopped with no finish_reason
    (llama-cpp-python's server cancels a reply when another request arrives), a connection
    lost mid-stream, or a body shorter than its length or chunks said."""
    import aiohttp  # litellm's transport, loaded by it already
    import httpx
    import openai

    if any(isinstance(e, TimeoutError | httpx.TimeoutException | openai.APITimeoutError) for e in chain):
        return False  # a read timeout mid-stream is the timeout kind
    if any(_STREAM_ENDED in str(e) or isinstance(e, aiohttp.ClientPayloadError) for e in chain):
        return True
    if any(isinstance(e, httpx.RemoteProtocolError) and "complete message body" in str(e) for e in chain):
        return True
    mid_stream = isinstance(chain[0], litellm.exceptions.MidStreamFallbackError)
    return mid_stream and any(isinstance(e, httpx.TransportError | aiohttp.ClientError) for e in chain)


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
