"""What `gitswarm doctor` reports: what a run with the checked options would use (output
limit and where it comes from, tool protocol, streaming, timeouts, prices), as lines or JSON,
with any key it might echo masked."""

from __future__ import annotations

import os
import re

SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL")
"""Environment variable names that may hold a key: their values are never printed."""
MAX_CALLS = 6
"""The most model calls doctor makes (doctor_calls says which)."""


def key_variables(model: str) -> list[str]:
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


def output_limit(config, probe) -> tuple[int, str]:
    """The output limit a run sends, and where it comes from."""
    from gitswarm.models.capabilities import known_output_limit
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import DEFAULT_OUTPUT_TOKENS

    limit = probe.llm.output_limit if probe else LiteLLMModel(config).output_limit
    if probe and limit < probe.limit_before:
        return limit, f"adopted from the provider (it refused {probe.limit_before})"
    wanted, known = config.max_output_tokens or DEFAULT_OUTPUT_TOKENS, known_output_limit(config.model)
    if known and known < wanted:
        return limit, f"litellm's known limit for the model (the setting asks for {wanted})"
    return limit, "the setting" if config.max_output_tokens else "the default"

def prices(config) -> dict | None:
    """USD per million tokens a run prices with (input, cached input, output), or None."""
    from gitswarm.models.capabilities import model_info
    from gitswarm.models.credentials import has_price

    if config.user_priced:
        cached = config.price_cached_in_per_mtok
        return {"input": config.price_in_per_mtok, "cached_input": config.price_in_per_mtok if cached is None
                else cached, "output": config.price_out_per_mtok, "source": "your prices"}
    if not has_price(config):
        return None
    info = model_info(config.model) or {}
    fields = {"input": "input_cost_per_token", "cached_input": "cache_read_input_token_cost",
              "output": "output_cost_per_token"}
    return {k: None if info.get(f) is None else round(info[f] * 1e6, 6) for k, f in fields.items()} | {
        "source": "litellm's"}

def run_settings(config, provider: str, probe) -> dict:
    """What a run with these options would use."""
    from gitswarm.models.client import LiteLLMModel

    limit, source = output_limit(config, probe)
    llm = probe.llm if probe else LiteLLMModel(config)
    return {"model": config.model, "provider": provider, "api_base": config.api_base,
            "tool_protocol": llm.protocol, "tool_protocol_setting": config.tool_protocol, "output_limit": limit,
            "output_limit_source": source, "reasoning_effort": config.reasoning_effort, "streaming": config.stream,
            "streaming_tools": config.stream and llm.stream_tools,
            "streaming_counts": config.stream and llm.stream_counts,
            "idle_timeout_s": config.idle_timeout_s, "reply_timeout_s": config.reply_timeout_s,
            "price_per_mtok": prices(config)}

def plain(report: dict) -> str:
    """The report as lines that read well on a terminal and in a pipe."""
    lines = []
    for c in report["checks"]:
        lines += [f"{c['status']:<5} {c['name']}: {c['detail']}"] + ([f"      fix: {c['fix']}"] if c["fix"] else [])
    refused = f", {report['failed_calls']} of them failed" if report["failed_calls"] else ""
    run, price = report["run"], report["run"]["price_per_mtok"]
    money = "unknown (--max-usd then needs --price-in and --price-out)" if price is None else ", ".join(
        f"{k.replace('_', ' ')} " + ("n/a" if price[k] is None else f"USD {price[k]:g}")
        for k in ("input", "cached_input", "output")) + f" ({price['source']})"
    rows = [("model", f"{run['model']} (provider {run['provider']})"),
            ("api base", run["api_base"] or "the provider's"),
            ("tool protocol", f"{run['tool_protocol']} (setting {run['tool_protocol_setting']})"),
            ("output limit", f"{run['output_limit']} tokens, {run['output_limit_source']}"),
            ("reasoning", run["reasoning_effort"] or "the model's default"),
            ("streaming", f"{_streaming(run)}; idle timeout {run['idle_timeout_s']:g} s, "
                          f"reply timeout {run['reply_timeout_s']:g} s"), ("price/Mtok", money)]
    made = f"model calls made: {report['calls']}{refused} (doctor makes at most {MAX_CALLS})"
    return "\n".join([*lines, made, "",
                      "A run would use:", *(f"  {k:<14} {v}" for k, v in rows)])

def _streaming(run: dict) -> str:
    if not run["streaming"]:
        return "off"
    if not run.get("streaming_counts", True):
        return "off after the first replies (the server's streams carry no usage; whole replies carry its count)"
    return "on" if run["streaming_tools"] else "on, but requests with tools unstreamed"


def redact(text: str, config) -> str:
    """The text with every key it might echo (the config's, secret-looking variables) masked."""
    secrets = {v for k, v in os.environ.items() if SECRET.search(k.upper()) and len(v) >= 8}
    for secret in sorted(secrets | ({config.api_key} if config.api_key else set()), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
