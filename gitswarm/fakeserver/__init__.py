"""An OpenAI-compatible HTTP server on 127.0.0.1 that replays scripts and injects faults.

Used by the tests and by the offline demo: the scripted model speaks through the same
litellm path as a real one. `python -m gitswarm.fakeserver --help` runs it by hand.
"""

from gitswarm.fakeserver.faults import FAULTS, FaultPlan
from gitswarm.fakeserver.responders import (
    FakeError,
    FakeReply,
    Responder,
    ScriptedResponder,
    ScriptExhausted,
    echo_responder,
)
from gitswarm.fakeserver.server import FakeServer, RequestRecord, serve

__all__ = [
    "FAULTS", "FakeError", "FakeReply", "FakeServer", "FaultPlan", "RequestRecord", "Responder",
    "ScriptExhausted", "ScriptedResponder", "echo_responder", "serve",
]
