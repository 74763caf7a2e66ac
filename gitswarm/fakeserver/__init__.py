"""A fake LLM provider on 127.0.0.1 that replays scripts, injects faults and plays a provider.

Used by the tests and by the offline demo: the scripted model speaks through the same
litellm path as a real one. A *personality* picks the provider it plays and enforces that
provider's documented rules with its own error bodies: `openai` (a plain OpenAI-compatible
server, no rules), `anthropic` (the Messages API), `openai-reasoning` (an o-series / gpt-5
model), `local-no-tools` (an Ollama or vLLM model without function calling), `llama-cpp`
(llama-cpp-python's server: one reply at a time, streams cut by the next request, its own
tool handling). With `tokens_per_s` the fake model takes its time. It keeps what it refused
(`server.rejections`) and what it billed (`server.bill_usd()`, at the providers' published
prices). `python -m gitswarm.fakeserver --help` runs it by hand.
"""

from gitswarm.fakeserver.billing import Charge, Usage
from gitswarm.fakeserver.faults import FAULTS, FaultPlan
from gitswarm.fakeserver.personalities import PERSONALITIES
from gitswarm.fakeserver.responders import (
    FakeError,
    FakeReply,
    Responder,
    ScriptedResponder,
    ScriptExhausted,
    echo_responder,
)
from gitswarm.fakeserver.server import FakeServer, Rejection, RequestRecord, serve

__all__ = [
    "FAULTS", "PERSONALITIES", "Charge", "FakeError", "FakeReply", "FakeServer", "FaultPlan", "Rejection",
    "RequestRecord", "Responder", "ScriptExhausted", "ScriptedResponder", "Usage", "echo_responder", "serve",
]
