"""OpenAI-compatible personalities with rules: a reasoning model, and a local model without tools.

`openai-reasoning` plays an o-series / gpt-5 model on /v1/chat/completions: `max_tokens` is
refused (it wants `max_completion_tokens`), so is a temperature other than 1 and the other
sampling parameters; `reasoning_effort` is checked against the model's values; usage carries
hidden reasoning tokens and the automatically cached prefix.

`local-no-tools` plays an Ollama (or vLLM) server whose model has no function calling: a
request with `tools` is refused in Ollama's words, and so is an output limit over the model's.
"""

from __future__ import annotations

import json

from gitswarm.fakeserver import catalog, wire
from gitswarm.fakeserver.billing import Usage
from gitswarm.fakeserver.caching import PrefixCache
from gitswarm.fakeserver.personality import Personality, Settings
from gitswarm.fakeserver.responders import FakeError, FakeReply, completion_json, estimate_tokens, stream_json

UNSUPPORTED_PARAMETERS = ("max_tokens", "top_p", "presence_penalty", "frequency_penalty", "logprobs",
                          "top_logprobs")
"""Parameters OpenAI's reasoning models refuse outright."""
REASONING_BY_EFFORT = {"none": 0, "minimal": 0, "low": 64, "medium": 256, "high": 1024, "xhigh": 2048}
"""Hidden reasoning tokens of a reply whose FakeReply does not say, by reasoning_effort."""


def invalid(message: str, param: str, code: str | None) -> FakeError:
    """A 400 invalid_request_error naming the offending parameter."""
    return FakeError(400, message, "invalid_request_error", code, param=param)


def too_large(name: str, asked: object, limit: int) -> FakeError:
    """OpenAI's wording for an output limit over the model's."""
    return invalid(f"{name} is too large: {asked}. This model supports at most {limit} completion tokens, "
                   f"whereas you provided {asked}.", name, None)


def output_limit(body: dict, spec: catalog.ModelSpec, names: tuple[str, ...]) -> FakeError | None:
    """The error for the first of `names` that asks for more output than the model gives."""
    for name in names:
        asked = body.get(name)
        if isinstance(asked, int) and asked > spec.output_limit:
            return too_large(name, asked, spec.output_limit)
    return None


def _raw(call: dict) -> str:
    return call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])


def _listed(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}" if len(quoted) > 1 else quoted[0]


class ReasoningPersonality(Personality):
    """An OpenAI reasoning model (o-series, gpt-5) on /v1/chat/completions."""

    name = "openai-reasoning"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.cache = PrefixCache(settings.clock)

    def validate(self, body: dict) -> FakeError | None:
        """max_tokens and sampling parameters refused, temperature 1 only, efforts checked."""
        for name in UNSUPPORTED_PARAMETERS:
            if name in body and body[name] is not None:
                hint = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
                return invalid(f"Unsupported parameter: '{name}' is not supported with this model.{hint}", name,
                               "unsupported_parameter")
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            return invalid(f"Unsupported value: 'temperature' does not support {temperature} with this model. "
                           "Only the default (1) value is supported.", "temperature", "unsupported_value")
        spec = self.catalog.spec(str(body.get("model", "")))
        return self._effort(body.get("reasoning_effort"), spec) or \
            output_limit(body, spec, ("max_completion_tokens",))

    def _effort(self, effort: object, spec: catalog.ModelSpec) -> FakeError | None:
        if effort is None or effort in spec.efforts:
            return None
        supported = f"Supported values are: {_listed(spec.efforts)}."
        if effort in catalog.ALL_EFFORTS:
            return invalid(f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this model. "
                           f"{supported}", "reasoning_effort", "unsupported_value")
        return invalid(f"Invalid value: '{effort}'. {supported}", "reasoning_effort", "invalid_value")

    def account(self, reply: FakeReply, body: dict) -> tuple[Usage, dict]:
        """Prompt tokens with the cached prefix, completion tokens with the hidden reasoning."""
        prompt_text = json.dumps(body.get("tools") or []) + json.dumps(body.get("messages") or [])
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else estimate_tokens(prompt_text)
        cached = min(prompt, self.cache.use(str(body.get("model", "")), prompt_text))
        reasoning = self._reasoning(reply, body)
        completion = reply.completion_tokens if reply.completion_tokens is not None else \
            reasoning + estimate_tokens(reply.content + "".join(map(_raw, reply.tool_calls)))
        reported = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0,
                                                  "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
        return Usage(prompt - cached, completion, cached, reasoning_tokens=reasoning), reported

    def _reasoning(self, reply: FakeReply, body: dict) -> int:
        if reply.reasoning_tokens is not None:
            return reply.reasoning_tokens
        if reply.thinking is not None:
            return estimate_tokens(reply.thinking)
        return REASONING_BY_EFFORT.get(str(body.get("reasoning_effort") or "medium"), 256)

    def render(self, reply: FakeReply, body: dict, index: int, usage: dict) -> dict:
        """A chat.completion with the detailed usage."""
        return completion_json(reply, body, index, usage)

    def events(self, reply: FakeReply, body: dict, index: int, usage: dict) -> list[bytes]:
        """Chunks; the usage chunk only when stream_options.include_usage asks for it."""
        chunks = [wire.sse(json.dumps(c)) for c in stream_json(reply, body, index, usage=usage)]
        return [*chunks, wire.sse("[DONE]")]


class LocalNoToolsPersonality(Personality):
    """A local OpenAI-compatible server (Ollama, vLLM) whose model has no function calling."""

    name = "local-no-tools"
    table: dict[str, catalog.ModelSpec] = {}  # noqa: RUF012 - local models are free and unknown

    def validate(self, body: dict) -> FakeError | None:
        """`tools` refused in Ollama's words; max_tokens over the configured limit refused."""
        if body.get("tools"):
            return FakeError(400, f"{ollama_name(str(body.get('model', '')))} does not support tools", "api_error")
        spec = self.catalog.spec(str(body.get("model", "")))
        return output_limit(body, spec, ("max_tokens", "max_completion_tokens"))


def ollama_name(model: str) -> str:
    """How Ollama names a model in its errors: registry.ollama.ai/library/<name>:<tag>."""
    tagged = model if ":" in model else f"{model}:latest"
    return tagged if "/" in tagged else f"registry.ollama.ai/library/{tagged}"
