"""A run's events turned into OpenTelemetry spans, timed by the events' own clocks.

The tree: the run; under it each episode, and the merger's model calls; under an episode each
step; under a step its model call and its tool calls. Model calls follow OpenTelemetry's GenAI
conventions (`chat <model>`, `gen_ai.usage.*`), tool calls too (`execute_tool <name>`). Every
span of an episode carries `gitswarm.episode`, `gitswarm.problem` and `gitswarm.worker`; an
episode that committed carries `gitswarm.commit`, so a trace leads back to `git log`. The run's
other events (merged, settled, selected, ...) are events of the run's span.

A model call is one `reply` event (its end, with its `seconds`); a tool call runs from its
`tool` event to the episode's next event; a step from its `step` event to the next step or the
episode's end.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from importlib.metadata import version

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from gitswarm.core import event_types as ev
from gitswarm.core.events import Event, data_of

PROVIDERS = {"bedrock": "aws.bedrock", "azure": "azure.ai.openai", "azure_ai": "azure.ai.inference",
             "gemini": "gcp.gemini", "vertex_ai": "gcp.vertex_ai", "mistral": "mistral_ai",
             "watsonx": "ibm.watsonx.ai", "xai": "x_ai"}
"""litellm's provider names where OpenTelemetry's `gen_ai.provider.name` spells them otherwise."""


def provider() -> TracerProvider:
    """A tracer provider of its own (the process-wide one is left alone) that batches spans to
    the OTLP/HTTP endpoint the environment names; service `gitswarm` unless it names another."""
    resource = Resource.create({"service.version": version("gitswarm")})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "gitswarm"}))
    sdk = TracerProvider(resource=resource, shutdown_on_exit=False)
    sdk.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return sdk


@dataclass
class _Episode:
    """An episode's open spans: its own, its step's, and the tool call in progress."""

    span: Span
    names: dict[str, str]
    """`gitswarm.episode`, `.problem` and `.worker`, for its spans."""
    step: Span | None = None
    began: int = 0
    """The step's start (ns): its model call's earliest (`seconds` is rounded)."""
    tool: tuple[str, int] | None = None
    """The tool call in progress: its name and start (ns)."""
    retries: list[ev.Retry] = field(default_factory=list)
    """The `retry` events of the step's model call, for its span."""


class Spans:
    """A listener: each event opens, ends or annotates a span (see the module's docstring)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer
        self.run: Span | None = None
        self.episodes: dict[str, _Episode] = {}

    def __call__(self, event: Event) -> None:
        at, episodes = ns(event.time), self.episodes
        match event:
            case ev.RunStarted():
                self.close()
                self.run = self.tracer.start_span("gitswarm run", start_time=at, attributes=attributes(data_of(event)))
            case ev.EpisodeStarted():
                self._episode_started(event, at)
            case ev.Step() if event.episode in episodes:
                self._step(episodes[event.episode], event)
            case ev.Tool() if event.episode in episodes:
                self._tool(episodes[event.episode], event)
            case ev.Retry() if event.episode in episodes:
                episodes[event.episode].retries.append(event)
            case ev.Reply() if event.episode is not None and event.episode in episodes:
                self._reply(episodes[event.episode], event)
            case ev.Reply():  # the merger's
                self._model_call(self.run, event, [])
            case ev.EpisodeEnded() if event.episode in episodes:
                self._ended(episodes.pop(event.episode), event)
            case ev.RunStopped() if self.run is not None:
                self.run.set_attributes(attributes(data_of(event)))
                self.run.end(end_time=at)
                self.run = None
            case _ if self.run is not None:
                self.run.add_event(event.kind, attributes(data_of(event)), timestamp=at)

    def close(self) -> None:
        """End every span still open, now, as cut: the run ended without its events."""
        now, cut = time.time_ns(), Status(StatusCode.ERROR, "the run ended before this did")
        for episode in list(self.episodes.values()):
            self._end_step(episode, now)
            episode.span.set_status(cut)
            episode.span.end(end_time=now)
        self.episodes.clear()
        if self.run is not None:
            self.run.set_status(cut)
            self.run.end(end_time=now)
            self.run = None

    def _episode_started(self, event: ev.EpisodeStarted, at: int) -> None:
        names = _who(event.episode, event.problem, event.worker)
        span = self.tracer.start_span(f"episode {event.episode}", context=_under(self.run), start_time=at,
                                      attributes={**names, "gitswarm.restarted": event.restarted,
                                                  "gen_ai.operation.name": "invoke_agent",
                                                  "gen_ai.agent.name": event.worker,
                                                  "gen_ai.conversation.id": event.episode})
        self.episodes[event.episode] = _Episode(span, names)

    def _step(self, episode: _Episode, event: ev.Step) -> None:
        at = ns(event.time)
        self._end_step(episode, at)
        episode.began = at
        episode.step = self.tracer.start_span(f"step {event.step}", context=_under(episode.span), start_time=at,
                                              attributes={**_who(event.episode, event.problem, event.worker),
                                                          "gitswarm.step": event.step})

    def _reply(self, episode: _Episode, event: ev.Reply) -> None:
        self._model_call(episode.step or episode.span, event, episode.retries, episode.began)
        episode.retries = []

    def _tool(self, episode: _Episode, event: ev.Tool) -> None:
        at = ns(event.time)
        self._end_tool(episode, at)
        episode.tool = (event.tool, at)

    def _ended(self, episode: _Episode, event: ev.EpisodeEnded) -> None:
        at = ns(event.time)
        self._end_step(episode, at)
        episode.span.set_attributes({**attributes(data_of(event)), "gitswarm.outcome": event.kind})
        if isinstance(event, ev.Failed):
            episode.span.set_status(Status(StatusCode.ERROR, event.note or "failed"))
        episode.span.end(end_time=at)

    def _model_call(self, parent: Span | None, event: ev.Reply, retries: list[ev.Retry], earliest: int = 0) -> None:
        model, end = event.model, ns(event.time)
        start = max(earliest, end - int(event.seconds * 1e9))
        span = self.tracer.start_span(f"chat {_name(model)}", context=_under(parent), kind=SpanKind.CLIENT,
                                      start_time=start, attributes=_genai(event, model))
        for retry in retries:
            span.add_event("retry", attributes(data_of(retry)), timestamp=ns(retry.time))
        if event.error:
            span.set_status(Status(StatusCode.ERROR, event.error))
        span.end(end_time=end)

    def _end_step(self, episode: _Episode, at: int) -> None:
        self._end_tool(episode, at)
        if episode.step is not None:
            episode.step.end(end_time=at)
            episode.step = None

    def _end_tool(self, episode: _Episode, at: int) -> None:
        if episode.tool is None:
            return
        name, start = episode.tool
        span = self.tracer.start_span(f"execute_tool {name}", context=_under(episode.step or episode.span),
                                      start_time=start,
                                      attributes={**episode.names, "gen_ai.operation.name": "execute_tool",
                                                  "gen_ai.tool.name": name, "gen_ai.tool.type": "function"})
        span.end(end_time=at)
        episode.tool = None


def _genai(e: ev.Reply, model: str) -> dict:
    """A model call's attributes: OpenTelemetry's GenAI conventions (the model's name as its
    provider knows it), then gitswarm's (the litellm model string, whose call it was)."""
    found = provider_of(model)
    out: dict[str, object] = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": _name(model), "gitswarm.model": model,
        "gen_ai.provider.name": found, "gen_ai.system": found, "gen_ai.usage.input_tokens": e.tokens_in,
        "gen_ai.usage.output_tokens": e.tokens_out, "gen_ai.usage.cache_read.input_tokens": e.cache_read,
        "gen_ai.usage.cache_creation.input_tokens": e.cache_write, "gitswarm.attempts": e.calls,
        **_who(e.episode, e.problem, e.worker)}
    if e.episode:
        out["gen_ai.conversation.id"] = e.episode
    if e.step:
        out["gitswarm.step"] = e.step
    if e.finish:
        out["gen_ai.response.finish_reasons"] = (e.finish,)
    if e.error:
        out["error.type"] = e.error
    return out


@functools.cache
def provider_of(model: str) -> str:
    """`gen_ai.provider.name` of a litellm model string: its provider prefix (litellm's guess
    for a bare name), spelt as OpenTelemetry spells it."""
    if "/" in model:
        name = model.split("/", 1)[0]
    else:
        from gitswarm.models.lib import litellm_module

        litellm = litellm_module()
        try:
            name = litellm.get_llm_provider(model)[1]
        except litellm.exceptions.BadRequestError:  # a name litellm cannot place
            name = "unknown"
    return PROVIDERS.get(name, name)


def _name(model: str) -> str:
    """The model's name without litellm's provider prefix: `gpt-4o` of `openai/gpt-4o`."""
    return model.split("/", 1)[1] if "/" in model else model


def _who(episode: str | None, problem: str | None, worker: str | None) -> dict[str, str]:
    """`gitswarm.episode`, `.problem` and `.worker`, those given."""
    names = {"episode": episode, "problem": problem, "worker": worker}
    return {f"gitswarm.{k}": v for k, v in names.items() if v}


def _under(parent: Span | None):
    """The context whose current span is `parent` (None: a new trace)."""
    return trace.set_span_in_context(parent) if parent is not None else None


def attributes(data: dict) -> dict:
    """An event's fields as span attributes (`gitswarm.<field>`): scalars as they are, lists of
    strings as lists, anything else as its text; None left out."""
    out: dict = {}
    for key, value in data.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            value = tuple(value)
        elif not isinstance(value, (str, bool, int, float)):
            value = str(value)
        out[f"gitswarm.{key}"] = value
    return out


def ns(seconds: float) -> int:
    """An event's time (seconds since the epoch) in nanoseconds, as spans take it."""
    return int(seconds * 1e9)


