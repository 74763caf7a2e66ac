"""`gitswarm doctor`: check a run's models with at most six tiny calls each before a run spends
money on them: the workers' model, and the reviewer model where the run names one."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import Effort, Exit, ToolProtocol, fail, user_errors
from gitswarm.cli.doctor_calls import Calls, needs_unstreamed, pair, probe, unstreamed
from gitswarm.cli.doctor_checks import Check, after_probe
from gitswarm.cli.doctor_report import key_variables, plain, redact, run_settings
from gitswarm.cli.fieldopts import field_values, option
from gitswarm.usage import Usage

Opt = typer.Option


def doctor(
    model: Annotated[str | None, Opt("--model", "-m", envvar="GITSWARM_MODEL",
                                     help="litellm model string, as for solve (env GITSWARM_MODEL).")] = None,
    api_base: Annotated[str | None, option(
        "api_base", "OpenAI-compatible server URL; default: the provider's.")] = None,
    max_output_tokens: Annotated[int | None, option("max_output_tokens", "Tokens of one reply at most.")] = None,
    reasoning_effort: Annotated[Effort | None, option(
        "reasoning_effort", "Check the reasoning mode at this effort.")] = None,
    tool_protocol: Annotated[ToolProtocol | None, option(
        "tool_protocol", "native, text, or {default} (default).")] = None,
    idle_timeout: Annotated[float | None, option("idle_timeout_s", "Seconds a stream may be silent.")] = None,
    reply_timeout: Annotated[float | None, option("reply_timeout_s", "Seconds one reply may take.")] = None,
    price_in: Annotated[float | None, option("price_in_per_mtok", "USD per million input tokens.")] = None,
    price_out: Annotated[float | None, option("price_out_per_mtok", "USD per million output tokens.")] = None,
    price_cached_in: Annotated[float | None, option(
        "price_cached_in_per_mtok", "USD per million cached input tokens.")] = None,
    price_cache_write: Annotated[float | None, option(
        "price_cache_write_per_mtok", "USD per million cache-written tokens.")] = None,
    reviewer_model: Annotated[str | None, Opt(
        help="The run's reviewer model, as for solve: checked the same way, after the workers' model.")] = None,
    reviewer_api_base: Annotated[str | None, Opt(help="The reviewer model's server URL.")] = None,
    as_json: Annotated[bool, Opt("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """Check a model before a run: credentials, one streamed call with a tool (once more
    unstreamed when the stream brings no tool call), usage, the output limit, the speed, two
    calls at once, the price and reasoning, and which sandbox this machine gives the programs of
    code problems (`gitswarm sandbox check`; none is a warning); then print what a run with
    these options would use.

    Takes the model options of `solve` (and its config file's [solve] table). Makes at most six
    tiny model calls per model: the probe, one more for each refusal or empty stream it learns
    from (the output limit, `tools`, streaming with tools), or the probe once more unstreamed;
    then two at once. A reviewer model (--reviewer-model, or reviewer_model in the config file)
    gets the same checks, reported under "reviewer". Keys come from the environment and are
    never printed. To try it offline, against the demo's scripted model on 127.0.0.1: `python -m
    gitswarm.fakeserver --demo --port 8000 &`, then `gitswarm doctor --model
    openai/gitswarm-scripted --api-base http://127.0.0.1:8000/v1`. Exit 0 when every check
    passed (a warning passes), 1 when one failed (each failure says what to do), 2 on bad input.
    """
    given = field_values(locals())
    with user_errors():
        config, reviewer = model_configs(given)
        provider = _provider(config.model)
        reviewer_provider = _provider(reviewer.model) if reviewer is not None else ""
    report = _checked(config, provider)
    report["checks"].append(asdict(_sandbox()))
    report["ok"] = report["ok"] and report["checks"][-1]["status"] != "FAIL"
    if reviewer is not None:
        report["reviewer"] = _checked(reviewer, reviewer_provider)
        report["ok"] = report["ok"] and report["reviewer"]["ok"]
    text = json.dumps(report) if as_json else plain(report) + (
        f"\n\nThe reviewer model (review episodes):\n{plain(report['reviewer'])}" if reviewer is not None else "")
    typer.echo(redact(redact(text, config), reviewer or config))
    raise typer.Exit(int(Exit.OK if report["ok"] else Exit.FAILED))


def _checked(config, provider: str) -> dict:
    """One model's checks, calls, speed and the settings a run would use, as the report has them."""
    first = _credentials(config, provider)
    calls = _calls(config) if first.status == "ok" else None
    checks, speed = after_probe(config, calls)
    checks.insert(0, first)
    usage = calls.usage() if calls is not None else Usage()
    return {"ok": all(c.status != "FAIL" for c in checks), "calls": usage.calls,
            "failed_calls": usage.failed_calls, "checks": [asdict(c) for c in checks], "speed": speed,
            "run": run_settings(config, provider, calls.probe if calls is not None else None)}


def _sandbox() -> Check:
    """Which containment the programs of code problems get here (`gitswarm sandbox check`)."""
    from gitswarm.cli.sandbox import report

    found = report()
    if found["ok"]:
        return Check("sandbox", "ok", f"programs run under {found['backend']}: {found['gives']}")
    why = "; ".join(f"{k}: {v}" for k, v in found["refused"].items())
    return Check("sandbox", "warn", f"no sandbox here ({why}): solve refuses code problems (program, "
                 "reproduce) unless given --unconfined", found["fix"])


def _calls(config) -> Calls:
    """The probe; the same unstreamed when its stream brought no tool call; two at once after a reply."""
    calls = Calls(probe(config))
    if needs_unstreamed(config, calls.probe):
        calls.unstreamed = unstreamed(calls.probe)
    if calls.probe.reply is not None:
        calls.pair = pair(calls)
    return calls


def model_configs(given: Mapping[str, object]):
    """The ModelConfigs `solve` would build for the workers and (None when the run names none)
    the reviewer: the config file's [solve] model settings (its model part) under the flags and
    environment (None: unset), checked by SolveConfig's rules. The workers' is unbounded in calls
    at once (`max_concurrent_calls`): doctor's two calls at once ask the server, not the bound."""
    from dataclasses import replace

    from gitswarm.engine.config import PARTS, SolveConfig
    from gitswarm.engine.settings import config_file, file_settings
    from gitswarm.models.credentials import NO_MODEL

    settings = {k: v for k, v in file_settings(config_file()).items() if k in PARTS["model"]}
    settings |= {k: v for k, v in given.items() if v is not None}
    cfg = SolveConfig(problems=Path("."), run=Path("."), **{"model": "", **settings})
    if not cfg.model.strip():
        raise fail(NO_MODEL)
    models = cfg.models
    return replace(models.worker, max_concurrent_calls=None), models.reviewer


def _provider(model: str) -> str:
    """litellm's provider of `model`; a model string it cannot route is bad input."""
    from gitswarm.models.credentials import unroutable
    from gitswarm.models.lib import litellm_module

    litellm = litellm_module()
    try:
        return litellm.get_llm_provider(model)[1]
    except litellm.exceptions.BadRequestError:
        raise fail(unroutable(model)) from None


def _credentials(config, provider: str) -> Check:
    """Credentials as litellm sees them, without a call: which variable holds the key."""
    from gitswarm.models.credentials import credentials_hint

    hint = credentials_hint(config.model, api_base=config.api_base, api_key=config.api_key)
    if hint:
        return Check("credentials", "FAIL", f"missing for provider {provider}", hint)
    found = [k for k in key_variables(config.model) if os.environ.get(k, "").strip()]
    placeholder = " (a placeholder is sent to --api-base)" if config.api_base else ""
    detail = "api_key of the config file" if config.api_key else f"{', '.join(found)} set" if found else \
        f"no key set, none needed{placeholder}"
    return Check("credentials", "ok", detail)


