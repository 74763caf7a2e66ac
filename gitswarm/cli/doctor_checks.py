"""The checks of `gitswarm doctor`, each from what its calls brought back: credentials, the call,
tool calling, usage, the output limit, speed, concurrency, the price and reasoning."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gitswarm.cli.doctor_calls import CUT_KINDS, Calls, Probe
from gitswarm.cli.doctor_report import key_variables, output_limit

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
INTERRUPTS = "start llama-cpp-python's server with --interrupt_requests False, give llama-server --parallel N, " \
    "or run with --workers 1"
SERIAL = "with several workers every call waits its turn, and the wait counts against the reply timeout: " \
    "give --max-concurrent-calls 1 (each call's timeout then starts in its turn), or give the server more " \
    "slots (llama-server --parallel N)"
QUEUED = 1.6
"""Of two like replies sent at once, the later taking this many times the earlier's time waited for it."""
PATIENCE_S = 300.0
"""A reply at the output limit taking longer than this is worth a warning."""
MIN_TIMED = 32
"""Output tokens a reply needs to time the model by: in a shorter one the wait for the first
token (the prompt read, the network) weighs too much."""


@dataclass
class Check:
    """One line of the report: what was checked, `ok`, `warn`, `FAIL` or `skip`, and what to do."""

    name: str
    status: str
    detail: str
    fix: str | None = None


def after_probe(config, calls: Calls | None) -> tuple[list[Check], dict | None]:
    """The checks after credentials, and the speed measured (None: none)."""
    names = ["call", "tool calling", "usage", "output limit", "speed", "concurrency", "price"] + \
        ["reasoning"] * bool(config.reasoning_effort)
    limit, source = output_limit(config, calls.probe if calls is not None else None)
    checks = {"output limit": Check("output limit", "ok", f"{limit} tokens, {source}"),
              "price": _price_check(config, calls)}
    if calls is None:
        checks |= {n: Check(n, "skip", "no call without credentials") for n in names if n not in checks}
        return [checks[n] for n in names], None
    probe, speed = calls.probe, None
    if calls.answered.reply is None:
        checks |= {n: Check(n, "skip", "the call failed")
                   for n in ("tool calling", "usage", "speed", "concurrency", "reasoning")}
        where, detail, fix = _diagnose(probe.error, config, probe)
        checks["call"] = Check("call", "FAIL", f"no reply: the request was refused (see {where})")
        checks[where] = Check(where, "FAIL", detail, fix)
    else:
        reply = probe.reply or calls.answered.reply  # a run's requests go as the probe's did
        checks["speed"], speed = speed_check(config, calls, limit)
        checks |= {"call": _call_check(calls), "tool calling": _tool_check(config, calls),
                   "usage": _usage_check(reply.usage), "concurrency": concurrency_check(calls)}
        checks |= {"reasoning": _reasoning_check(config, reply.usage)} if config.reasoning_effort else {}
    return [checks[n] for n in names], speed


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
        names = " or ".join(key_variables(config.model)) or "the provider's key variable"
        return "call", f"the key was refused by {config.api_base or 'the provider'} ({said})", \
            f"set {names} to a valid key and run again"
    return "call", said, FIXES.get(error.kind, DEFAULT_FIX)


def _said(message: str) -> str:
    """The provider's own words from litellm's message, on one line and short."""
    found = re.search(r'"message":\s*"((?:[^"\\]|\\.)*)"', message)
    text = found.group(1) if found else re.sub(r"^(litellm\.)?(\w+(Error|Exception)(:| -)\s*)+", "", message)
    text = " ".join(text.split()) or "no message"
    return text if len(text) <= 200 else text[:197] + "..."


def _streamed_outcome(probe: Probe) -> str:
    """What the streamed probe brought back, when it was no ping call."""
    if probe.error is not None:
        return f"a {probe.error.kind} error"
    return "the model answered without calling ping"


def _call_check(calls: Calls) -> Check:
    """A reply came: streamed, or unstreamed after the stream failed."""
    probe, answered = calls.probe, calls.answered
    if answered is probe:
        if probe.streamed:
            return Check("call", "ok", f"a streamed reply in {probe.seconds:.1f} s")
        return Check("call", "ok", f"an unstreamed reply in {probe.seconds:.1f} s (the server could not stream a "
                     "request with tools: it came back empty or failed)")
    if probe.reply is not None:
        return Check("call", "ok", f"a streamed reply in {probe.seconds:.1f} s")
    return Check("call", "warn", f"streamed, {probe.error.kind}: {_said(probe.error.message)}; unstreamed, a "
                 f"reply in {answered.seconds:.1f} s")


def _tool_check(config, calls: Calls) -> Check:
    """The reply called ping, natively or through the text protocol (and why that one), and
    whether only unstreamed."""
    probe, answered = calls.probe, calls.answered
    called = answered.pinged() and not answered.reply.truncated
    if calls.unstreamed is not None:
        if called:
            run = "a run streams requests with tools unless a streamed one comes back empty" \
                if hasattr(probe.llm, "stream_tools") else "a run streams every request"
            return Check("tool calling", "warn", f"tool calls work unstreamed only (streamed, "
                         f"{_streamed_outcome(probe)})", f"{run}: use --tool-protocol text (its calls stream)")
        return Check("tool calling", "FAIL", "the model answered without calling ping, streamed or not",
                     "try --tool-protocol text (llama-cpp-python's server, for one, leaves `tools` out of the "
                     "prompt unless a request names a tool_choice)")
    if called and config.stream and not probe.llm.stream_tools:  # (not for lack of usage in streams)
        return Check("tool calling", "warn", "tool calls work unstreamed only; a run sends requests with tools "
                     "unstreamed", "nothing to do: such a reply is then bounded by --reply-timeout alone")
    return _native_check(probe)


def _native_check(probe: Probe) -> Check:
    """The probe's reply called ping, or says why not."""
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
    if usage.estimated_tokens:
        return Check("usage", "ok", f"{', '.join(parts)} tokens by litellm's count: the server's stream carried no "
                     "usage, so a run asks it for whole replies, which carry the server's own count")
    cache = "" if usage.cache_read or usage.cache_write else " (no cache fields)"
    return Check("usage", "ok", ", ".join(parts) + " tokens" + cache)


def speed_check(config, calls: Calls, limit: int) -> tuple[Check, dict | None]:
    """Output tokens per second of the fastest reply long enough to time (its whole call, the
    wait for the first token included), and how long a reply at the output limit would take."""
    replies = [(c.reply.usage.tokens_out, c.seconds) for c in (calls.probe, calls.unstreamed, *calls.pair)
               if c is not None and c.reply is not None and c.seconds > 0]
    timed = [(tokens, seconds) for tokens, seconds in replies if tokens >= MIN_TIMED]
    if not timed:
        most = max((tokens for tokens, _ in replies), default=0)
        return Check("speed", "skip", f"no reply long enough to time ({most} output tokens at most, "
                     f"{MIN_TIMED} needed)"), None
    tokens, seconds = max(timed, key=lambda t: t[0] / t[1])
    rate, timeout = tokens / seconds, config.reply_timeout_s
    at_limit = limit / rate
    measured = {"tokens_per_s": round(rate, 1), "output_tokens": tokens, "seconds": round(seconds, 2),
                "reply_at_limit_s": round(at_limit)}
    said = f"{rate:.1f} tokens/s ({tokens} output tokens in {seconds:.1f} s): a {limit:,}-token reply would take " \
        f"{_duration(at_limit)}"
    if at_limit <= min(timeout, PATIENCE_S):
        return Check("speed", "ok", said), measured
    suggested = suggested_limit(rate, min(timeout, PATIENCE_S), timeout, limit)
    smaller = f"consider --max-output-tokens {suggested}" if suggested else "pick a faster model or server"
    if at_limit > timeout:
        return Check("speed", "warn", f"{said}, past the reply timeout ({timeout:g} s), which cuts it",
                     f"{smaller}, or a longer --reply-timeout"), measured
    return Check("speed", "warn", said, f"{smaller} (about {_duration(PATIENCE_S)} at this speed)"), measured


def suggested_limit(rate: float, target_s: float, timeout_s: float, limit: int) -> int | None:
    """An output limit written in about `target_s` at `rate`, rounded to one significant digit
    (down where up would pass the reply timeout or the limit); None when none fits."""
    raw = rate * target_s
    if raw < 1:
        return None
    unit = 10 ** math.floor(math.log10(raw))
    for n in (round(raw / unit) * unit, math.floor(raw / unit) * unit):
        if 0 < n < limit and n / rate <= timeout_s:
            return int(n)
    return None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def concurrency_check(calls: Calls) -> Check:
    """Two requests at once both complete, as a run's workers need; a server that interrupts
    one for the other (llama-cpp-python's default) fails."""
    if not calls.pair:
        return Check("concurrency", "skip", "the streamed call failed, so a run's requests would too")
    done = [o for o in calls.pair if _complete(o, calls.probe)]
    if len(done) == len(calls.pair):
        return _one_at_a_time(done) or Check("concurrency", "ok", f"two requests at once both completed (in "
                                             f"{max(o.seconds for o in calls.pair):.1f} s{_untold(done)})")
    errors = [o.error for o in calls.pair if o.error is not None]
    what = f"a {errors[0].kind} error" if errors else "a reply without its ping call"
    if done and errors and errors[0].kind == "rate_limit":
        return Check("concurrency", "warn", f"one of two requests at once was rate-limited ({what})",
                     "a run retries it; fewer --workers wait less")
    if not errors:  # a cut reply is an error (stream_cut and the like): these came back whole, without ping
        why = "since whole replies are not cut" if not calls.pair_streamed else "each stream ended whole"
        return Check("concurrency", "ok", f"two requests at once both completed ({'one' if done else 'both'} "
                     f"without its ping call: the model's answer, {why})")
    local = calls.probe is not None and calls.probe.llm.config.api_base is not None
    interrupts = INTERRUPTS if local else "the provider cut a reply: try again, or run with fewer --workers"
    if done and (not errors or errors[0].kind in CUT_KINDS):
        return Check("concurrency", "FAIL", f"the server interrupts concurrent requests (one of two at once: "
                     f"{what})", interrupts)
    failed = "neither of two requests at once" if not done else "one of two requests at once"
    return Check("concurrency", "FAIL", f"{failed} completed ({what})",
                 FIXES.get(errors[0].kind, DEFAULT_FIX) if errors else interrupts)


def _one_at_a_time(pair: list) -> Check | None:
    """A warning when the server answered two like requests one after the other (the later took
    about twice as long as the earlier: it waited in the server's queue); None otherwise."""
    (fast, slow), tokens = sorted(o.seconds for o in pair), sorted(o.reply.usage.tokens_out for o in pair)
    if fast <= 0 or slow < QUEUED * fast or tokens[1] > QUEUED * max(tokens[0], 1):  # unlike replies: no sign
        return None
    return Check("concurrency", "warn", f"the server answers one request at a time (two at once: one took "
                 f"{fast:.1f} s, the other {slow:.1f} s, waiting in its queue)", SERIAL)


def _untold(pair: list) -> str:
    """What the timing cannot tell when the two replies were too unlike in length to compare."""
    tokens = sorted(o.reply.usage.tokens_out for o in pair)
    if tokens[1] <= QUEUED * max(tokens[0], 1):
        return ""
    return (f"; their replies, {tokens[0]} and {tokens[1]} tokens, are too unlike to tell whether the server "
            "answers them one at a time")


def _complete(outcome, probe: Probe) -> bool:
    """A reply with what the same request alone brought: its ping call, when the probe had one."""
    reply = outcome.reply
    if reply is None or reply.truncated:
        return False
    return not probe.pinged() or any(c.name == "ping" and not c.error for c in reply.tool_calls)


def _price_check(config, calls: Calls | None) -> Check:
    """A price is known (so --max-usd works), and what doctor's calls cost."""
    from gitswarm.models.credentials import has_price
    from gitswarm.usage import Usage

    if not has_price(config):
        return Check("price", "warn", f"unknown: litellm has no price for {config.model}",
                     "--max-usd then needs --price-in and --price-out (USD per million tokens)")
    spent = calls.usage() if calls is not None else Usage()
    cost = spent.cost_usd
    said = f"; doctor's calls cost USD {cost:.6f}".replace("USD 0.000000", "nothing") if cost is not None \
        else "; the cost of doctor's calls is unknown" if spent.calls else ""
    return Check("price", "ok", ("your prices" if config.user_priced else "litellm's") + said)


def _reasoning_check(config, usage) -> Check:
    """With --reasoning-effort: the call succeeded with it; were reasoning tokens reported?"""
    if usage.reasoning:
        return Check("reasoning", "ok", f"effort {config.reasoning_effort} accepted, {usage.reasoning} reasoning "
                     "tokens reported")
    return Check("reasoning", "warn", f"effort {config.reasoning_effort} accepted, but no reasoning tokens reported",
                 "the provider may not report them (they are billed as output either way)")
