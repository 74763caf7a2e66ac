"""The model calls `gitswarm doctor` makes, each as a run would send it: the probe (streamed, with
the `ping` tool), the same once more unstreamed when the stream brought no tool call, and two
at once, whose longer replies (a ping with fifty numbers) also time the model.

At most six calls. The probe takes up to four: one more for each thing its client learns from
(an output limit the provider states, `tools` refused, a stream with tools that came back
empty). The unstreamed probe comes only when the client learnt neither of the last two, so
then the probe took two at most. The two at once are sent with all the probe learnt, so they
have nothing left to learn."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, replace
from typing import Any

PROBE_WORD = "gitswarm"
PAIR_COUNT = 50
"""The two calls at once ask for a ping with the numbers up to this: a reply long enough to time."""
PROBE_TIMEOUT_S = 300.0
"""A call waits at most this long for its reply, whatever the run's reply timeout."""
CUT_KINDS = frozenset({"connection", "malformed", "server", "stream_cut"})
"""The kinds a reply cut or lost on its way arrives as: an empty or cut stream, a dropped
connection, the 500 of a server that cannot stream what it was asked."""


@dataclass
class Probe:
    """One probe call: the client after it, its limit and protocol before, the reply or the error."""

    llm: Any
    limit_before: int
    protocol_before: str
    reply: Any = None
    error: Any = None
    seconds: float = 0.0

    @property
    def usage(self) -> Any:
        """What the call used, all its attempts."""
        return (self.reply or self.error).usage

    @property
    def streamed(self) -> bool:
        """The probe's last attempt was streamed: streaming is on, and the client did not turn
        requests with native tools unstreamed (it may still stop streaming after this reply,
        when its stream carried no usage: `llm.streams`)."""
        native = self.llm.protocol == "native"
        return self.llm.config.stream and (self.llm.stream_tools or not native)

    def pinged(self) -> bool:
        """The reply called ping, natively or through the text protocol."""
        return self.reply is not None and any(c.name == "ping" for c in self.reply.tool_calls)


@dataclass
class Outcome:
    """One of the calls sent at once: its reply or its error, and how long it took."""

    reply: Any = None
    error: Any = None
    seconds: float = 0.0

    @property
    def usage(self) -> Any:
        """What the call used."""
        return (self.reply or self.error).usage


@dataclass
class Calls:
    """Every call doctor made (none without credentials: then there is no `Calls`)."""

    probe: Probe
    unstreamed: Probe | None = None
    """The probe once more without streaming, when the streamed one brought no tool call."""
    pair: list[Outcome] = field(default_factory=list)
    """The two calls sent at once, as a run's workers would."""
    pair_streamed: bool = True
    """The two were streamed (a server can cut a stream for another request, never a whole reply)."""

    @property
    def answered(self) -> Probe:
        """The probe whose reply the run's settings are judged by: the streamed one, or the
        unstreamed one where only that came back."""
        if self.unstreamed is not None and (self.unstreamed.reply is not None or self.probe.reply is None):
            return self.unstreamed
        return self.probe

    def usage(self) -> Any:
        """What every call used, summed."""
        from gitswarm.usage import Usage

        return sum((c.usage for c in (self.probe, self.unstreamed, *self.pair) if c is not None), Usage())


def request(pair: bool = False) -> tuple[list[dict], list[dict]]:
    """The messages of the probe (or of one of the two calls at once) and its one tool, from prompts/."""
    import yaml

    from gitswarm.resources import data_dir, render

    specs = yaml.safe_load((data_dir("prompts") / "doctor_tools.yaml").read_text(encoding="utf-8"))
    prompt = render("doctor_pair.md.j2", count=PAIR_COUNT) if pair else render("doctor_probe.md.j2", word=PROBE_WORD)
    return [{"role": "user", "content": prompt}], [{"type": "function", "function": spec} for spec in specs]


def probe(config) -> Probe:
    """One reply to the probe, by a client that learns once from each kind of refusal (the
    output limit it states, `tools` refused) and from an empty stream, as a run's does; a
    transient failure is not retried."""
    from gitswarm.models.client import LiteLLMModel

    llm = LiteLLMModel(replace(config, max_retries=0, timeout_retries=0,
                               reply_timeout_s=min(config.reply_timeout_s, PROBE_TIMEOUT_S)))
    return _timed(Probe(llm, llm.output_limit, llm.protocol))


def needs_unstreamed(config, first: Probe) -> bool:
    """The streamed probe offered tools natively and brought no ping call (text, nothing, a cut
    or failed stream), and its client did not already try without streaming."""
    if not (config.stream and first.streamed and first.llm.protocol == "native") or first.pinged():
        return False
    return first.reply is not None or first.error.kind in CUT_KINDS


def unstreamed(first: Probe) -> Probe:
    """The probe once more, unstreamed, with what the first one learnt (its limit, native tools)."""
    from gitswarm.models.client import LiteLLMModel

    llm = LiteLLMModel(replace(first.llm.config, stream=False, max_output_tokens=first.llm.output_limit,
                               tool_protocol="native"))
    return _timed(Probe(llm, llm.output_limit, llm.protocol))


def pair(calls: Calls) -> list[Outcome]:
    """Two probes at once, sent as a run would send them after the probe: its output limit, its
    protocol, streamed unless requests with tools go unstreamed or its streams carried no usage."""
    import anyio

    from gitswarm.models.client import LiteLLMModel

    learnt = calls.probe.llm
    calls.pair_streamed = learnt.streams(with_tools=True)
    llm = LiteLLMModel(replace(learnt.config, stream=calls.pair_streamed,
                               max_output_tokens=learnt.output_limit,
                               tool_protocol=learnt.protocol))
    outcomes = [Outcome(), Outcome()]

    async def both() -> None:
        async with anyio.create_task_group() as group:
            for outcome in outcomes:
                group.start_soon(_one, llm, outcome)

    anyio.run(both)
    return outcomes


async def _one(llm, outcome: Outcome) -> None:
    from gitswarm.models.errors import ModelError

    messages, tools = request(pair=True)
    start = time.monotonic()
    try:
        outcome.reply = await llm.complete(messages, tools)
    except ModelError as error:
        outcome.error = error
    outcome.seconds = time.monotonic() - start


def _timed(call: Probe) -> Probe:
    import anyio

    from gitswarm.models.errors import ModelError

    messages, tools = request()
    start = time.monotonic()
    try:
        call.reply = anyio.run(functools.partial(call.llm.complete, messages, tools))
    except ModelError as error:
        call.error = error
    call.seconds = time.monotonic() - start
    return call
