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

from gitswarm.core.events import Event

ENDS = ("committed", "nominated", "abstain", "failed", "stopped")
"""The events that end an episode."""
WHO = ("episode", "problem", "worker")
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
    retries: list[Event] = field(default_factory=list)
    """The `retry` events of the step's model call, for its span."""


class Spans:
    """A listener: each event opens, ends or annotates a span (see the module's docstring)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer
        self.run: Span | None = None
        self.episodes: dict[str, _Episode] = {}

    def __call__(self, event: Event) -> None:
        data, at = event.data, ns(event.time)
        if event.kind == "run_started":
            self.close()
            self.run = self.tracer.start_span("gitswarm run", start_time=at, attributes=attributes(data))
        elif event.kind == "episode_started":
            self._episode_started(data, at)
        elif event.kind in ("step", "tool", "retry", "reply") and data.get("episode") in self.episodes:
            getattr(self, f"_{event.kind}")(self.episodes[str(data["episode"])], event)
        elif event.kind == "reply":  # the merger's
            self._model_call(self.run, event, [])
        elif event.kind in ENDS and data.get("episode") in self.episodes:
            self._ended(self.episodes.pop(str(data["episode"])), event)
        elif event.kind == "run_stopped" and self.run is not None:
            self.run.set_attributes(attributes(data))
            self.run.end(end_time=at)
            self.run = None
        elif self.run is not None:
            self.run.add_event(event.kind, attributes(data), timestamp=at)

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

    def _episode_started(self, data: dict, at: int) -> None:
        names = _who(data)
        span = self.tracer.start_span(f"episode {data['episode']}", context=_under(self.run), start_time=at,
                                      attributes={**names, "gitswarm.restarted": bool(data.get("restarted")),
                                                  "gen_ai.operation.name": "invoke_agent",
                                                  "gen_ai.agent.name": str(data["worker"]),
                                                  "gen_ai.conversation.id": str(data["episode"])})
        self.episodes[str(data["episode"])] = _Episode(span, names)

    def _step(self, episode: _Episode, event: Event) -> None:
        at = ns(event.time)
        self._end_step(episode, at)
        step = event.data.get("step")
        episode.began = at
        episode.step = self.tracer.start_span(f"step {step}", context=_under(episode.span), start_time=at,
                                              attributes={**_who(event.data), "gitswarm.step": int(_number(step))})

    def _retry(self, episode: _Episode, event: Event) -> None:
        episode.retries.append(event)

    def _reply(self, episode: _Episode, event: Event) -> None:
        self._model_call(episode.step or episode.span, event, episode.retries, episode.began)
        episode.retries = []

    def _tool(self, episode: _Episode, event: Event) -> None:
        at = ns(event.time)
        self._end_tool(episode, at)
        episode.tool = (str(event.data.get("tool")), at)

    def _ended(self, episode: _Episode, event: Event) -> None:
        at, data = ns(event.time), event.data
        self._end_step(episode, at)
        episode.span.set_attributes({**attributes(data), "gitswarm.outcome": event.kind})
        if event.kind == "failed":
            episode.span.set_status(Status(StatusCode.ERROR, str(data.get("note") or "failed")))
        episode.span.end(end_time=at)

    def _model_call(self, parent: Span | None, event: Event, retries: list[Event], earliest: int = 0) -> None:
        data = event.data
        model, end = str(data.get("model") or ""), ns(event.time)
        start = max(earliest, end - int(_number(data.get("seconds")) * 1e9))
        span = self.tracer.start_span(f"chat {_name(model)}", context=_under(parent), kind=SpanKind.CLIENT,
                                      start_time=start, attributes=_genai(data, model))
        for retry in retries:
            span.add_event("retry", attributes(retry.data), timestamp=ns(retry.time))
        if data.get("error"):
            span.set_status(Status(StatusCode.ERROR, str(data["error"])))
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


def _genai(data: dict, model: str) -> dict:
    """A model call's attributes: OpenTelemetry's GenAI conventions (the model's name as its
    provider knows it), then gitswarm's (the litellm model string, whose call it was)."""
    found = provider_of(model)
    out = {"gen_ai.operation.name": "chat", "gen_ai.request.model": _name(model), "gitswarm.model": model,
           "gen_ai.provider.name": found,
           "gen_ai.system": found, "gen_ai.usage.input_tokens": int(data.get("tokens_in") or 0),
           "gen_ai.usage.output_tokens": int(data.get("tokens_out") or 0),
           "gen_ai.usage.cache_read.input_tokens": int(data.get("cache_read") or 0),
           "gen_ai.usage.cache_creation.input_tokens": int(data.get("cache_write") or 0),
           "gitswarm.attempts": int(data.get("calls") or 0), **_who(data)}
    if data.get("episode"):
        out["gen_ai.conversation.id"] = str(data["episode"])
    if data.get("step"):
        out["gitswarm.step"] = int(data["step"])
    if data.get("finish"):
        out["gen_ai.response.finish_reasons"] = (str(data["finish"]),)
    if data.get("error"):
        out["error.type"] = str(data["error"])
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


def _number(value: object) -> float:
    """An event's numeric field (0 when it has none)."""
    return float(value) if isinstance(value, int | float) else 0.0


def _who(data: dict) -> dict:
    return {f"gitswarm.{k}": str(data[k]) for k in WHO if data.get(k)}


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


