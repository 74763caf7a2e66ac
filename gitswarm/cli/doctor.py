"""`gitswarm doctor`: check a model with at most three cheap calls before a run spends money on it."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from gitswarm.cli.common import Effort, Exit, ToolProtocol, fail, user_errors
from gitswarm.cli.doctor_report import SECRET, output_limit, plain, redact, run_settings

MODEL_KEYS = ("model", "api_base", "api_key", "max_output_tokens", "reasoning_effort", "tool_protocol",
              "idle_timeout_s", "reply_timeout_s", "price_in_per_mtok", "price_out_per_mtok",
              "price_cached_in_per_mtok", "price_cache_write_per_mtok")
"""The settings of `solve` its ModelConfig is made of: the ones doctor takes."""
PROBE_WORD = "gitswarm"
PROBE_TIMEOUT_S = 300.0
"""The probe waits at most this long for its reply, whatever the run's reply timeout."""
FIXES = {
    "permission": "the key may not use this model: check its access (project, organisation, region) or pick "
                  "another model",
    "not_found": "check the model name (a litellm string, provider/name) and, if given, --api-base (the server's "
                 "URL, often ending in /v1)",
    "quota": "the account has no quota or credit left: add credit with the provider, or use another key",
    "rate_limit": "rate-limited on a tiny call: wait a minute, or check the account's rate limits",
    "server": "the provider's server failed: try again later (a run retries such errors)",
    "timeout": "no reply in time: is --api-base (or the provider) reachable from here, and does it serve this "
               "model? A slow local model may need a larger --reply-timeout",
    "connection": "could not connect: is --api-base right (scheme, host, port) and the server running?",
    "malformed": "the reply was no valid event stream: is --api-base an OpenAI-compatible endpoint (often .../v1)?",
}
DEFAULT_FIX = "check the model name and the options it takes (--reasoning-effort, --max-output-tokens)"
Opt = typer.Option


@dataclass
class Check:
    """One line of the report: what was checked, `ok`, `warn`, `FAIL` or `skip`, and what to do."""

    name: str
    status: str
    detail: str
    fix: str | None = None


@dataclass
class Probe:
    """The probe call: the client after it, its limit and protocol before, the reply or the error."""

    llm: Any
    limit_before: int
    protocol_before: str
    reply: Any = None
    error: Any = None
    seconds: float = 0.0


def doctor(
    model: Annotated[str | None, Opt("--model", "-m", envvar="GITSWARM_MODEL",
                                     help="litellm model string, as for solve (env GITSWARM_MODEL).")] = None,
    api_base: Annotated[str | None, Opt(help="OpenAI-compatible server URL; default: the provider's.")] = None,
    max_output_tokens: Annotated[int | None, Opt(min=1, help="Tokens of one reply at most.")] = None,
    reasoning_effort: Annotated[Effort | None, Opt(help="Check the reasoning mode at this effort.")] = None,
    tool_protocol: Annotated[ToolProtocol | None, Opt(help="native, text, or auto (default).")] = None,
    idle_timeout: Annotated[float | None, Opt(min=0, help="Seconds a stream may be silent.")] = None,
    reply_timeout: Annotated[float | None, Opt(min=0, help="Seconds one reply may take.")] = None,
    price_in: Annotated[float | None, Opt(min=0, help="USD per million input tokens.")] = None,
    price_out: Annotated[float | None, Opt(min=0, help="USD per million output tokens.")] = None,
    price_cached_in: Annotated[float | None, Opt(min=0, help="USD per million cached input tokens.")] = None,
    price_cache_write: Annotated[float | None, Opt(min=0, help="USD per million cache-written tokens.")] = None,
    as_json: Annotated[bool, Opt("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Check a model before a run: credentials, one streamed call with a tool, usage, the output
    limit, the price and reasoning; then print what a run with these options would use.

    Takes the model options of `solve` (and its config file's [solve] table). Makes at most
    three model calls: one, and one more for each refusal it learns from (the output limit,
    `tools`). Keys come from the environment and are never printed. Exit 0 when every check
    passed, 1 when one failed (each failure says what to do), 2 on bad input.
    """
    given = dict(zip(MODEL_KEYS, (model, api_base, None, max_output_tokens, reasoning_effort, tool_protocol,
                                  idle_timeout, reply_timeout, price_in, price_out, price_cached_in,
                                  price_cache_write), strict=True))
    with user_errors():
        config = model_config(given)
        provider = _provider(config.model)
    first = _credentials(config, provider)
    probe = _probe(config) if first.status == "ok" else None
    checks = [first, *_probe_checks(config, probe)]
    usage = (probe.reply or probe.error).usage if probe else None
    report = {"ok": all(c.status != "FAIL" for c in checks), "calls": usage.calls if usage else 0,
              "failed_calls": usage.failed_calls if usage else 0, "checks": [asdict(c) for c in checks],
              "run": run_settings(config, provider, probe)}
    typer.echo(redact(json.dumps(report) if as_json else plain(report), config))
    raise typer.Exit(int(Exit.OK if report["ok"] else Exit.FAILED))


def model_config(given: dict[str, object]):
    """The ModelConfig `solve` would build: the config file's [solve] model settings under the
    flags and environment (None: unset), checked by SolveConfig's rules."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.settings import config_file, file_settings
    from gitswarm.models import ModelConfig, credentials_hint

    settings = {k: v for k, v in file_settings(config_file()).items() if k in MODEL_KEYS}
    settings |= {k: v for k, v in given.items() if v is not None}
    cfg = SolveConfig(problems=Path("."), run=Path("."), **{"model": "", **settings})
    if not cfg.model.strip():
        raise fail(credentials_hint(""))
    return ModelConfig(**{k: getattr(cfg, k) for k in MODEL_KEYS})


def _provider(model: str) -> str:
    """litellm's provider of `model`; a model string it cannot route is bad input."""
    from gitswarm.models import credentials_hint
    from gitswarm.models.lib import litellm_module

    litellm = litellm_module()
    try:
        return litellm.get_llm_provider(model)[1]
    except litellm.exceptions.BadRequestError:
        raise fail(credentials_hint(model)) from None


def _key_variables(model: str) -> list[str]:
    """The variables litellm reads the key of `model` from: asked with every secret-looking
    variable hidden for a moment, since litellm names only the missing ones."""
    from gitswarm.models.lib import litellm_module

    hidden = {k: v for k, v in os.environ.items() if SECRET.search(k.upper())}
    for name in hidden:
        del os.environ[name]
    try:
        missing = litellm_module().validate_environment(model)["missing_keys"]
    finally:
        os.environ.update(hidden)
    return [k for k in missing if not k.endswith(("_API_BASE", "_BASE_URL"))]


def _credentials(config, provider: str) -> Check:
    """Credentials as litellm sees them, without a call: which variable holds the key."""
    from gitswarm.models import credentials_hint

    hint = credentials_hint(config.model, api_base=config.api_base, api_key=config.api_key)
    if hint:
        return Check("credentials", "FAIL", f"missing for provider {provider}", hint)
    found = [k for k in _key_variables(config.model) if os.environ.get(k, "").strip()]
    placeholder = " (a placeholder is sent to --api-base)" if config.api_base else ""
    detail = "api_key of the config file" if config.api_key else f"{', '.join(found)} set" if found else \
        f"no key set, none needed{placeholder}"
    return Check("credentials", "ok", detail)


def _probe(config) -> Probe:
    """One reply to the probe prompt with the ping tool, in three attempts at most: the client
    learns once from each kind of refusal (the output limit it states, `tools` refused), as a
    run does; a transient failure is not retried."""
    import functools

    import anyio
    import yaml

    from gitswarm.models import LiteLLMModel, ModelError
    from gitswarm.resources import data_dir, render

    specs = yaml.safe_load((data_dir("prompts") / "doctor_tools.yaml").read_text(encoding="utf-8"))
    tools = [{"type": "function", "function": spec} for spec in specs]
    messages = [{"role": "user", "content": render("doctor_probe.md.j2", word=PROBE_WORD)}]
    llm = LiteLLMModel(replace(config, max_retries=0, timeout_retries=0,
                               reply_timeout_s=min(config.reply_timeout_s, PROBE_TIMEOUT_S)))
    probe, start = Probe(llm, llm.output_limit, llm.protocol), time.monotonic()
    try:
        probe.reply = anyio.run(functools.partial(llm.complete, messages, tools))
    except ModelError as error:
        probe.error = error
    probe.seconds = time.monotonic() - start
    return probe


def _probe_checks(config, probe: Probe | None) -> list[Check]:
    """The checks after credentials: the call, tool calling, usage, output limit, price, reasoning."""
    names = ["call", "tool calling", "usage", "output limit", "price"] + ["reasoning"] * bool(config.reasoning_effort)
    limit, source = output_limit(config, probe)
    checks = {"output limit": Check("output limit", "ok", f"{limit} tokens, {source}"),
              "price": _price_check(config, probe)}
    if probe is None:
        checks |= {n: Check(n, "skip", "no call without credentials") for n in names if n not in checks}
    elif probe.error is not None:
        checks |= {n: Check(n, "skip", "the call failed") for n in ("tool calling", "usage", "reasoning")}
        where, detail, fix = _diagnose(probe.error, config, probe)
        checks["call"] = Check("call", "FAIL", f"no reply: the request was refused (see {where})")
        checks[where] = Check(where, "FAIL", detail, fix)
    else:
        checks |= {"call": Check("call", "ok", f"a streamed reply in {probe.seconds:.1f} s"),
                   "tool calling": _tool_check(probe), "usage": _usage_check(probe.reply.usage)}
        checks |= {"reasoning": _reasoning_check(config, probe.reply.usage)} if config.reasoning_effort else {}
    return [checks[n] for n in names]


def _diagnose(error, config, probe: Probe) -> tuple[str, str, str]:
    """Which check a failed call fails, what happened, and what to do."""
    from gitswarm.models.capabilities import refuses_tools, stated_output_limit

    said, refused = f"{error.kind}: {_said(error.message)}", error.kind == "bad_request"
    adopted = probe.llm.output_limit if probe.llm.output_limit < probe.limit_before else None
    limit = (stated_output_limit(error.message) if refused else None) or adopted
    if limit:
        also = "; it refused `tools` too, so a run uses the text protocol" \
            if probe.llm.protocol != probe.protocol_before else ""
        return ("output limit", f"the provider refused {probe.limit_before} output tokens and states {limit}{also}",
                f"give --max-output-tokens {limit} and run doctor again (a run adopts the limit, but doctor's "
                "calls are spent)")
    if refused and refuses_tools(error.message):
        return ("tool calling", f"the server refuses `tools` ({said})",
                "use --tool-protocol auto (the default) or text: tools then go through the text protocol")
    if refused and config.reasoning_effort and "reason" in error.message.lower():
        return ("reasoning", f"refused with --reasoning-effort {config.reasoning_effort} ({said})",
                "pick another --reasoning-effort, or leave it out (the model's default)")
    if error.kind == "auth":
        names = " or ".join(_key_variables(config.model)) or "the provider's key variable"
        return "call", f"the key was refused by {config.api_base or 'the provider'} ({said})", \
            f"set {names} to a valid key and run again"
    return "call", said, FIXES.get(error.kind, DEFAULT_FIX)


def _said(message: str) -> str:
    """The provider's own words from litellm's message, on one line and short."""
    found = re.search(r'"message":\s*"((?:[^"\\]|\\.)*)"', message)
    text = found.group(1) if found else re.sub(r"^(litellm\.)?(\w+(Error|Exception)(:| -)\s*)+", "", message)
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


def _tool_check(probe: Probe) -> Check:
    """The reply called ping, natively or through the text protocol (and why that one)."""
    calls = [c for c in probe.reply.tool_calls if c.name == "ping"]
    how = "natively" if probe.llm.protocol == "native" else "through the text protocol" + (
        ": the server refused `tools`, so a run falls back to it automatically" if probe.protocol_before == "native"
        else " (--tool-protocol text)" if probe.llm.config.tool_protocol == "text"
        else " (litellm says the model has no function calling)")
    if not calls:
        cut = " (cut at the output limit: raise --max-output-tokens)" if probe.reply.truncated else ""
        return Check("tool calling", "FAIL", f"the model answered without calling ping{cut}",
                     "try --tool-protocol text" if probe.llm.protocol == "native" else "pick a stronger model")
    if calls[0].error:
        return Check("tool calling", "FAIL", f"ping called {how}, but its arguments are unusable: {calls[0].error}",
                     "a run would lose such calls: try the other --tool-protocol")
    return Check("tool calling", "ok", f"ping called {how}")


def _usage_check(usage) -> Check:
    """Input and output tokens arrived (a run's caps and costs count them), and the other parts."""
    parts = [f"{usage.tokens_in} input", f"{usage.tokens_out} output"] + [
        f"{value} {name}" for name, value in (("cache-read", usage.cache_read), ("cache-written", usage.cache_write),
                                              ("reasoning", usage.reasoning)) if value]
    if not usage.tokens_in or not usage.tokens_out:
        return Check("usage", "FAIL", f"incomplete: {', '.join(parts)} tokens",
                     "the server reports no usage in streams: a run's token caps and costs would count nothing")
    cache = "" if usage.cache_read or usage.cache_write else " (no cache fields)"
    return Check("usage", "ok", ", ".join(parts) + " tokens" + cache)


def _price_check(config, probe: Probe | None) -> Check:
    """A price is known (so --max-usd works), and what the probe cost."""
    from gitswarm.models import has_price

    if not has_price(config):
        return Check("price", "warn", f"unknown: litellm has no price for {config.model}",
                     "--max-usd then needs --price-in and --price-out (USD per million tokens)")
    cost = (probe.reply or probe.error).usage.cost_usd if probe else None
    spent = f"; the probe cost USD {cost:.6f}".replace("USD 0.000000", "nothing") if cost is not None \
        else "; the probe's cost is unknown" if probe else ""
    return Check("price", "ok", ("your prices" if config.user_priced else "litellm's") + spent)


def _reasoning_check(config, usage) -> Check:
    """With --reasoning-effort: the call succeeded with it; were reasoning tokens reported?"""
    if usage.reasoning:
        return Check("reasoning", "ok", f"effort {config.reasoning_effort} accepted, {usage.reasoning} reasoning "
                     "tokens reported")
    return Check("reasoning", "warn", f"effort {config.reasoning_effort} accepted, but no reasoning tokens reported",
                 "the provider may not report them (they are billed as output either way)")
