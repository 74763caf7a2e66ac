"""Run the git CLI against a remote, one subprocess per call, and type what a failure means.

The CLI, not libgit2, talks to remotes: it brings git's whole transport (ssh with the user's
config and keys, https with credential helpers, `git://`, `file://`) and its server-side
atomic ref updates. One short-lived process per call keeps nothing open in a long-running
worker. git never prompts here: a missing credential is an `AuthFailed`, not a hang.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gitswarm.remote.errors import AuthFailed, NoRepository, RemoteError, Unreachable
from gitswarm.remote.urls import mask

TIMEOUT_S = 120.0
"""How long one git call may take before the remote counts as unreachable."""

_ENV = {"LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}
"""English messages (classified below) and no password prompt in a process nobody watches."""

# Checked in this order: git daemon's "access denied or repository not exported" is a missing
# repository, and "could not read from remote repository" follows ssh's own, better, reason.
_KINDS: tuple[tuple[type[RemoteError], tuple[str, ...]], ...] = (
    (NoRepository, ("does not appear to be a git repository", "no such repository", "not exported",
                    "repository not found", "returned error: 404")),
    (AuthFailed, ("authentication failed", "could not read username", "could not read password",
                  "terminal prompts disabled", "permission denied", "host key verification failed",
                  "returned error: 401", "returned error: 403")),
    (Unreachable, ("unable to connect", "connection refused", "could not resolve", "timed out",
                   "network is unreachable", "no route to host", "couldn't connect", "failed to connect",
                   "connection reset", "connection closed", "hung up", "early eof", "unable to access",
                   "could not read from remote repository", "broken pipe", "expected flush",
                   "unexpected disconnect", "sideband demultiplexer", "the remote end hung up")),
)


def run(mirror: Path, args: Sequence[str], url: str, *, timeout_s: float = TIMEOUT_S,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """`git -C mirror args...`; with `check`, a failure is raised as a typed `RemoteError`."""
    try:
        done = subprocess.run(["git", "-C", str(mirror), *args], capture_output=True, text=True,
                              env={**os.environ, **_ENV}, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise Unreachable(mask(url), f"no answer in {timeout_s:g} s") from None
    if check and done.returncode != 0:
        raise classify(url, done.stderr)
    return done


def classify(url: str, stderr: str) -> RemoteError:
    """The typed error for git's `stderr` of a failed call against `url`."""
    detail = said(stderr)
    lowered = stderr.lower()
    for kind, markers in _KINDS:
        if any(marker in lowered for marker in markers):
            return kind(mask(url), detail)
    return RemoteError(mask(url), detail)


def said(stderr: str, limit: int = 400) -> str:
    """git's own reasons in `stderr` (its fatal and error lines, and what the remote said: a
    hook that declines a push says why there), masked."""
    lines = [ln.strip() for ln in stderr.splitlines()]
    reasons = [ln for ln in lines if ln.startswith(("fatal:", "error:", "remote:")) and ln != "remote:"] or \
        [ln for ln in lines if ln and not ln.startswith("hint:")]
    text = mask("; ".join(reasons))
    return text if len(text) <= limit else text[: limit - 1] + "…"
