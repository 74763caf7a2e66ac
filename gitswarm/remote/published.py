"""What a coordinator published, read back: the run's settings and its stop.

The readers' half of `remote.publish`, apart so that the views (`status`, the report, the
dashboard) read a run without importing the publisher, which builds on the engine's settings.
"""

from __future__ import annotations

import json

from gitswarm.core.stops import Stop, StopReason
from gitswarm.memory import books
from gitswarm.memory.errors import NotARun
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.repo import META_REF

SETTINGS = "settings.json"
STOP_BOOK = "stop"
STOP_REF = books.ref_name(STOP_BOOK)
STOP_FILE = "stop.json"


def published(repo: GitReader) -> dict:
    """The settings a coordinator published, of whatever run protocol (readers such as the
    report read older runs too); `NotARun` when there are none."""
    ref = repo.ref(META_REF)
    data = repo.file(ref, SETTINGS) if ref is not None else None
    if data is None:
        raise NotARun("the remote holds no gitswarm run published by a coordinator (no "
                      f"{META_REF}:{SETTINGS}); start `gitswarm solve SET --run URL` first")
    return json.loads(data)


def read_stop(repo: GitReader, ref: str = STOP_REF) -> Stop | None:
    """The stop at `ref`, or None while the run goes on (no stop, or a stop cleared)."""
    found = repo.ref(ref)
    text = repo.file(found, STOP_FILE) if found is not None else None
    if text is None:
        return None
    data = json.loads(text)
    return Stop(StopReason(data["reason"]), data["detail"])
