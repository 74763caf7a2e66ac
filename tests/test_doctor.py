"""`gitswarm doctor` through the real CLI against the fake server on 127.0.0.1, one
personality per provider: a healthy model, a local server without tools, an Anthropic model
litellm does not know, a refused key, an unpriced model, a reasoning model, llama-cpp-python's
server (its tool handling, its interrupted streams), a slow model, and bad input.

The server runs on its own event loop in a thread (anyio's blocking portal), the CLI in the
test's thread, each with its own loop, as a user's terminal and a provider would be.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio.from_thread
import pytest
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.fakeserver import FakeError, FakeReply, FakeServer, FaultPlan, serve
from gitswarm.models import ModelConfig, has_price
from gitswarm.sandbox import containment
from gitswarm.sandbox.backends import ORDER_ENV

runner = CliRunner()
WRONG_KEY = "sk-ant-doctor-wrong-key-0123456789"


def ping(body: dict) -> FakeReply:
    """A model that does what the probe asks: ping natively when offered tools, else in text,
    with the word asked for (or the numbers, for the two calls at once)."""
    text = json.dumps(body["messages"])
    counted = re.search(r"numbers from 1 to (\d+)", text)
    word = " ".join(map(str, range(1, int(counted.group(1)) + 1))) if counted else "gitswarm"
    if body.get("tools"):
        return FakeReply(tool_calls=[{"name": "ping", "arguments": {"word": word}}])
    return FakeReply(content=f'<call name="ping">\n<word>{word}</word>\n</call>')


@pytest.fixture(scope="module")
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    has_price(ModelConfig("openai/fake-model"))  # pay litellm's import once, not in the first test
    with anyio.from_thread.start_blocking_portal() as running:
        yield running


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No keys, model or config file of the machine the tests run on."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITSWARM_MODEL", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("GITSWARM_CONFIG", str(tmp_path / "empty.toml"))


@contextmanager
def fake(portal, responder=ping, **options) -> Iterator[FakeServer]:
    """The fake server, serving for the block on the portal's loop."""
    with portal.wrap_async_context_manager(serve(responder, **options)) as server:
        yield server


def doctor(server: FakeServer | None, *args: str):
    """`gitswarm doctor` at the server (its URL as --api-base), through the real CLI."""
    base = ["--api-base", server.url] if server else []
    result = runner.invoke(app, ["doctor", *base, *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def line(output: str, name: str) -> str:
    """The report's line of one check."""
    return next(ln for ln in output.splitlines() if ln[6:].startswith(f"{name}:"))


def test_healthy_model_exit_0_native_tools_a_streamed_probe_and_two_at_once(portal) -> None:
    with fake(portal) as server:
        result = doctor(server, "-m", "openai/gpt-4o")
    out = result.stdout
    assert result.exit_code == 0, out
    assert line(out, "tool calling") == "ok    tool calling: ping called natively"
    assert line(out, "call").startswith("ok    call: a streamed reply")
    assert line(out, "usage").startswith("ok    usage: ") and "input" in line(out, "usage")
    assert line(out, "concurrency").startswith("ok    concurrency: two requests at once both completed")
    assert line(out, "price").startswith("ok    price: litellm's; doctor's calls cost USD ")
    assert "model calls made: 3 (doctor makes at most 6)" in out and "FAIL" not in out
    assert "  output limit   16000 tokens, the default" in out
    assert "input USD 2.5, cached input USD 1.25, output USD 10 (litellm's)" in out
    sent = server.requests
    assert len(sent) == 3 and all(r["stream"] is True and r["max_tokens"] == 16000 for r in sent)
    assert all([t["function"]["name"] for t in r["tools"]] == ["ping"] for r in sent)
    assert "`ping` tool" in sent[0]["messages"][0]["content"]  # the prompt of prompts/doctor_probe.md.j2
    assert "numbers from 1 to 50" in sent[1]["messages"][0]["content"]  # prompts/doctor_pair.md.j2


def together(responder, pair: tuple[int, int] = (2, 3)):
    """`responder`, but the requests numbered `pair` (doctor's two calls at once) are answered
    only once both have arrived, as a server that serves them concurrently does: their timing
    then cannot read as queued when a loaded machine delays one of them."""
    seen, both = [0], anyio.Event()

    async def respond(body: dict):
        seen[0] += 1
        if seen[0] in pair:
            if seen[0] == pair[1]:
                both.set()
            await both.wait()
        return responder(body)
    return respond


def test_json_is_one_object_with_the_run_settings(portal) -> None:
    with fake(portal, together(ping)) as server:
        result = doctor(server, "-m", "openai/gpt-4o", "--json", "--idle-timeout", "60")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["ok"] is True and report["calls"] == 3
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert list(statuses) == ["credentials", "call", "tool calling", "usage", "output limit", "speed", "concurrency",
                              "price", "sandbox"]
    # the fake's speed is the machine's, and so is its sandbox (a warning where it has none)
    assert {s for name, s in statuses.items() if name not in ("speed", "sandbox")} == {"ok"}
    assert statuses["sandbox"] == ("ok" if containment().backend else "warn")
    assert report["speed"]["output_tokens"] >= 32 and report["speed"]["tokens_per_s"] > 0
    run = report["run"]
    assert (run["provider"], run["tool_protocol"], run["output_limit"], run["streaming"]) == \
        ("openai", "native", 16000, True)
    assert (run["idle_timeout_s"], run["reply_timeout_s"]) == (60, 1800)
    assert run["price_per_mtok"] == {"input": 2.5, "cached_input": 1.25, "output": 10.0, "source": "litellm's"}


def test_no_tools_server_text_protocol_chosen_automatically(portal) -> None:
    with fake(portal, personality="local-no-tools") as server:
        result = doctor(server, "-m", "openai/llama3", "--max-output-tokens", "4096")
    out = result.stdout
    assert result.exit_code == 0, out
    assert "ping called through the text protocol: the server refused `tools`, so a run falls back to it " \
        "automatically" in line(out, "tool calling")
    assert "  tool protocol  text (setting auto)" in out
    assert "model calls made: 4, 1 of them failed" in out
    assert "tools" in server.requests[0] and not any("tools" in r for r in server.requests[1:])


def test_no_tools_server_with_native_protocol_fails_with_the_fix(portal) -> None:
    with fake(portal, personality="local-no-tools") as server:
        result = doctor(server, "-m", "openai/llama3", "--max-output-tokens", "4096", "--tool-protocol", "native")
    out = result.stdout
    assert result.exit_code == 1, out
    assert line(out, "tool calling").startswith("FAIL  tool calling: the server refuses `tools`")
    assert "fix: use --tool-protocol auto (the default) or text" in out
    assert len(server.requests) == 1


def test_two_refusals_are_both_learnt_from_in_three_calls(portal) -> None:
    """Tools refused, then the output limit: doctor adopts both as a run would, in three calls."""
    with fake(portal, personality="local-no-tools") as server:
        result = doctor(server, "-m", "openai/llama3")
    out = result.stdout
    assert result.exit_code == 0, out
    assert "ok    output limit: 8192 tokens, adopted from the provider (it refused 16000)" in out
    assert "through the text protocol" in out
    assert len(server.requests) == 5 and "model calls made: 5, 2 of them failed" in out
    assert all(r["max_tokens"] == 8192 and "tools" not in r for r in server.requests[3:])  # the two at once


def test_anthropic_model_litellm_does_not_know_limit_adopted(portal) -> None:
    with fake(portal, personality="anthropic", output_limits={"claude-doctor-test": 12000}) as server:
        result = doctor(server, "-m", "anthropic/claude-doctor-test")
    out = result.stdout
    assert result.exit_code == 0, out
    assert line(out, "output limit") == "ok    output limit: 12000 tokens, adopted from the provider (it refused 16000)"
    assert line(out, "tool calling") == "ok    tool calling: ping called natively"
    assert [r["max_tokens"] for r in server.requests] == [16000, 12000, 12000, 12000]
    assert line(out, "price").startswith("warn  price: unknown")


def test_refused_key_names_the_variable_and_is_never_printed(portal, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", WRONG_KEY)
    with fake(portal, personality="anthropic", api_key="the-right-key") as server:
        result = doctor(server, "-m", "anthropic/claude-sonnet-4-5")
    out = result.stdout
    assert result.exit_code == 1, out
    assert line(out, "credentials") == "ok    credentials: ANTHROPIC_API_KEY set"
    assert line(out, "call").startswith("FAIL  call: the key was refused by http://127.0.0.1:")
    assert "fix: set ANTHROPIC_API_KEY to a valid key" in out
    assert len(server.requests) == 1 and WRONG_KEY not in result.output


def test_a_key_the_provider_echoes_is_masked(portal, monkeypatch) -> None:
    key = "sk-doctor-echoed-9876543210"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    refuse = FakeError(401, f"Incorrect API key provided: {key}.", "invalid_request_error", "invalid_api_key")
    with fake(portal, lambda body: refuse) as server:
        for args in ((), ("--json",)):
            result = doctor(server, "-m", "openai/gpt-4o", *args)
            assert result.exit_code == 1 and key not in result.output and "***" in result.output
    assert "set OPENAI_API_KEY to a valid key" in result.output


def test_missing_credentials_fail_without_a_call() -> None:
    result = doctor(None, "-m", "anthropic/claude-sonnet-4-5")
    out = result.stdout
    assert result.exit_code == 1, out
    assert line(out, "credentials").startswith("FAIL  credentials: missing for provider anthropic")
    assert "export ANTHROPIC_API_KEY=" in out and "model calls made: 0" in out
    assert line(out, "call") == "skip  call: no call without credentials"


def test_unpriced_model_says_max_usd_needs_prices(portal) -> None:
    with fake(portal) as server:
        unknown = doctor(server, "-m", "openai/doctor-unpriced")
        priced = doctor(server, "-m", "openai/doctor-unpriced", "--price-in", "1", "--price-out", "4")
    assert unknown.exit_code == 0, unknown.stdout
    assert line(unknown.stdout, "price") == "warn  price: unknown: litellm has no price for openai/doctor-unpriced"
    assert "--max-usd then needs --price-in and --price-out" in unknown.stdout
    assert "price/Mtok     unknown" in unknown.stdout
    assert line(priced.stdout, "price").startswith("ok    price: your prices; doctor's calls cost USD 0.000")
    assert "input USD 1, cached input USD 1, output USD 4 (your prices)" in priced.stdout


def test_reasoning_tokens_reported_or_not(portal) -> None:
    with fake(portal, personality="openai-reasoning") as server:
        reasoning = doctor(server, "-m", "openai/o4-mini", "--reasoning-effort", "high")
    with fake(portal) as server:
        silent = doctor(server, "-m", "openai/doctor-unpriced", "--reasoning-effort", "low")
    assert reasoning.exit_code == 0, reasoning.stdout
    assert line(reasoning.stdout, "reasoning") == \
        "ok    reasoning: effort high accepted, 1024 reasoning tokens reported"
    assert "  reasoning      high" in reasoning.stdout
    assert silent.exit_code == 0, silent.stdout
    assert line(silent.stdout, "reasoning").startswith("warn  reasoning: effort low accepted, but no reasoning")


def test_unknown_model_and_unreachable_server_say_what_to_check(portal) -> None:
    missing = FakeError(404, "The model `doctor-nope` does not exist", "invalid_request_error", "model_not_found")
    with fake(portal, lambda body: missing) as server:
        result = doctor(server, "-m", "openai/doctor-nope")
    assert result.exit_code == 1 and "FAIL  call: not_found: The model `doctor-nope` does not exist" in result.stdout
    assert "fix: check the model name" in result.stdout and "--api-base" in result.stdout
    with fake(portal, faults=FaultPlan.first("timeout")) as server:
        result = doctor(server, "-m", "openai/doctor-slow", "--reply-timeout", "0.5")
    assert result.exit_code == 1 and line(result.stdout, "call").startswith("FAIL  call: timeout:")
    assert "is --api-base (or the provider) reachable" in result.stdout and len(server.requests) == 1


def test_the_config_file_model_settings_are_used(portal, tmp_path, monkeypatch) -> None:
    config = tmp_path / "gitswarm.toml"
    config.write_text('[solve]\nmodel = "openai/gpt-4o"\nmax_output_tokens = 2000\nworkers = 3\n')
    monkeypatch.setenv("GITSWARM_CONFIG", str(config))
    with fake(portal) as server:
        result = doctor(server)
    assert result.exit_code == 0, result.stdout
    assert "  model          openai/gpt-4o (provider openai)" in result.stdout
    assert "  output limit   2000 tokens, the setting" in result.stdout and server.requests[0]["max_tokens"] == 2000


def test_llama_cpp_calls_tools_unstreamed_once_told_tool_choice_auto(portal) -> None:
    """chatml-function-calling leaves `tools` out of the prompt of a request without
    tool_choice, so gitswarm says "auto" to a self-hosted server; then the model calls tools
    unstreamed, and a streamed call it picks is a 500 the client learns from."""
    with fake(portal, personality="llama-cpp", interrupt_requests=False) as server:
        native = doctor(server, "-m", "openai/qwen2.5-3b")
        text = doctor(server, "-m", "openai/qwen2.5-3b", "--tool-protocol", "text")
    assert native.exit_code == 0, native.stdout
    assert line(native.stdout, "call").startswith("ok    call: an unstreamed reply in ")
    assert line(native.stdout, "tool calling") == \
        "warn  tool calling: tool calls work unstreamed only; a run sends requests with tools unstreamed"
    probe, again = server.requests[:2]
    assert probe["stream"] is True and "stream" not in again and probe["tools"] == again["tools"]
    assert probe["tool_choice"] == again["tool_choice"] == "auto"
    assert text.exit_code == 0, text.stdout
    assert line(text.stdout, "tool calling") == "ok    tool calling: ping called through the text protocol " \
        "(--tool-protocol text)"


def test_llama_cpp_functionary_tool_calls_work_unstreamed_only(portal) -> None:
    """The functionary format calls tools unstreamed but fails every streamed request with them
    (a wordless 500, which the client learns from as it does from an empty stream)."""
    with fake(portal, personality="llama-cpp", chat_format="functionary") as server:
        plain = doctor(server, "-m", "openai/functionary-small")
        as_json = doctor(server, "-m", "openai/functionary-small", "--json")
    assert plain.exit_code == 0, plain.stdout
    assert line(plain.stdout, "call").startswith("ok    call: an unstreamed reply in ")
    assert line(plain.stdout, "tool calling") == \
        "warn  tool calling: tool calls work unstreamed only; a run sends requests with tools unstreamed"
    report = json.loads(as_json.stdout)
    assert as_json.exit_code == 0 and report["ok"] is True
    tools = next(c for c in report["checks"] if c["name"] == "tool calling")
    assert tools["status"] == "warn" and tools["detail"].startswith("tool calls work unstreamed only")


def test_streams_with_tools_empty_unstreamed_calls_work(portal) -> None:
    """A server whose streams with tools come back empty, while the same request unstreamed
    calls the tool: doctor (or the client itself) asks again unstreamed and passes with a warning."""
    def empty_streams(body: dict) -> FakeReply:
        return FakeReply(completion_tokens=0) if body.get("tools") and body.get("stream") else ping(body)

    with fake(portal, empty_streams) as server:
        result = doctor(server, "-m", "openai/doctor-local")
    out = result.stdout
    assert result.exit_code == 0, out
    assert line(out, "tool calling").startswith("warn  tool calling: tool calls work unstreamed only")
    assert server.requests[0]["stream"] is True and "stream" not in server.requests[1]
    assert "ping" in {t["function"]["name"] for t in server.requests[1]["tools"]}


@pytest.mark.parametrize("interrupt", [True, False])
def test_llama_cpp_interrupts_no_request_of_a_run_whose_streams_carry_no_usage(portal, interrupt: bool) -> None:
    """llama-cpp-python's streams carry no usage, so after the probe's stream the two requests at
    once go unstreamed, as a run's would; the server interrupts only streams, so both complete
    whether or not it was started with --interrupt_requests False, one after the other."""
    with fake(portal, personality="llama-cpp", tokens_per_s=60, interrupt_requests=interrupt) as server:
        plain = doctor(server, "-m", "openai/qwen2.5-3b", "--tool-protocol", "text")
    assert plain.exit_code == 0, plain.stdout
    assert [bool(r.get("stream")) for r in server.requests] == [True, False, False]
    assert line(plain.stdout, "concurrency").startswith(
        "warn  concurrency: the server answers one request at a time (two at once: one took ")
    assert "fix: with several workers every call waits its turn, and the wait counts against the reply timeout: " \
        "give --max-concurrent-calls 1" in plain.stdout
    assert not any(r.interrupted for r in server.records)
    assert "  streaming      off after the first replies (the server's streams carry no usage" in plain.stdout
    assert line(plain.stdout, "usage").endswith("output tokens by litellm's count: the server's stream carried no "
                                                "usage, so a run asks it for whole replies, which carry the server's "
                                                "own count")
    assert line(plain.stdout, "tool calling").startswith("ok    tool calling: ping called through the text protocol")


def test_a_whole_reply_without_ping_is_the_models_not_an_interruption(portal) -> None:
    """A small model leaves ping out of one of the two calls at once. Sent unstreamed (the
    llama-cpp server's streams carry no usage), no reply can have been cut: not `interrupts`."""
    pairs: list[dict] = []

    def forgetful(body: dict) -> FakeReply:
        pairs.extend([body] if "numbers from 1 to" in json.dumps(body["messages"]) else [])
        return FakeReply(content="I would rather count sheep.") if len(pairs) == 1 and pairs[0] is body \
            else ping(body)

    with fake(portal, forgetful, personality="llama-cpp", interrupt_requests=True) as server:
        plain = doctor(server, "-m", "openai/qwen2.5-3b", "--tool-protocol", "text")
    assert [bool(r.get("stream")) for r in server.requests] == [True, False, False]
    assert line(plain.stdout, "concurrency").startswith("ok    concurrency: two requests at once both completed "
                                                        "(one without its ping call: the model's answer"), plain.stdout


def test_two_whole_streamed_replies_without_ping_are_the_models_answer(portal) -> None:
    """A model that pings alone but writes the two calls at once in prose, streamed: both came
    back whole (a cut stream is an error), so concurrency is not failed and no server flag is advised."""
    def prose_in_pairs(body: dict) -> FakeReply:
        pair = "numbers from 1 to" in json.dumps(body["messages"])
        return FakeReply(content="1 2 3, and so on.") if pair else ping(body)

    with fake(portal, prose_in_pairs) as server:
        plain = doctor(server, "-m", "openai/gpt-4o")
    assert line(plain.stdout, "tool calling") == "ok    tool calling: ping called natively"
    assert line(plain.stdout, "concurrency").startswith(
        "ok    concurrency: two requests at once both completed (both without its ping call: the model's answer, "
        "each stream ended whole)"), plain.stdout
    assert plain.exit_code == 0 and "interrupt_requests" not in plain.stdout


def test_doctor_passes_against_the_demos_offline_model(portal) -> None:
    """The offline fake of the docs (`python -m gitswarm.fakeserver --demo`) serves the demo's
    scripted model, which answers doctor's probes as `solve` runs on it: exit 0."""
    from gitswarm.demo.brain import respond

    with fake(portal, respond) as server:
        plain = doctor(server, "-m", "openai/gitswarm-scripted")
    assert plain.exit_code == 0, plain.stdout
    assert line(plain.stdout, "tool calling") == "ok    tool calling: ping called natively"
    assert line(plain.stdout, "concurrency").startswith("ok    concurrency: two requests at once both completed")


def test_a_server_that_answers_two_at_once_in_parallel_is_ok(portal) -> None:
    with fake(portal, tokens_per_s=60) as server:
        plain = doctor(server, "-m", "openai/qwen2.5-3b", "--tool-protocol", "text")
    assert plain.exit_code == 0, plain.stdout
    assert line(plain.stdout, "concurrency").startswith("ok    concurrency: two requests at once both completed")
    assert server.max_in_flight == 2


def test_a_server_that_cuts_one_of_two_streams_at_once_fails_with_the_fix(portal) -> None:
    with fake(portal, faults=FaultPlan.first(None, "truncated_stream")) as server:
        plain = doctor(server, "-m", "openai/qwen2.5-3b", "--tool-protocol", "text")
    assert plain.exit_code == 1, plain.stdout
    assert line(plain.stdout, "concurrency").startswith(
        "FAIL  concurrency: the server interrupts concurrent requests (one of two at once: a stream_cut error)")
    fix = "start llama-cpp-python's server with --interrupt_requests False, give llama-server --parallel N, " \
        "or run with --workers 1"
    assert f"fix: {fix}" in plain.stdout


def test_a_slow_model_is_timed_and_a_smaller_limit_suggested(portal) -> None:
    """The server sends 10 tokens a second at most: the rate doctor measures is no faster, and no
    slower than the reply's tokens over the whole doctor run (however loaded the machine); the
    minutes and the limit it suggests follow from that rate."""
    with fake(portal, tokens_per_s=10) as server:
        began = time.monotonic()
        plain = doctor(server, "-m", "openai/doctor-slow")
        plain_s, began = time.monotonic() - began, time.monotonic()
        as_json = doctor(server, "-m", "openai/doctor-slow", "--reply-timeout", "900", "--json")
        json_s = time.monotonic() - began
    speed = line(plain.stdout, "speed")
    found = re.fullmatch(r"warn  speed: (\d+\.\d) tokens/s \((\d+) output tokens in (\d+\.\d) s\): "
                         r"a 16,000-token reply would take (\d+) minutes", speed)
    assert found and int(found[2]) >= 32, speed
    shown, tokens, seconds = float(found[1]), int(found[2]), float(found[3])
    assert tokens / plain_s <= shown <= 10 and shown == pytest.approx(tokens / seconds, abs=0.1 + shown * 0.02), speed
    assert round(16000 / (shown + 0.05) / 60) <= int(found[4]) <= round(16000 / (shown - 0.05) / 60)
    suggested = re.search(r"fix: consider --max-output-tokens (\d+) \(about 5 minutes at this speed\)",
                          plain.stdout)
    assert suggested and about_five_minutes(int(suggested[1]), shown), plain.stdout
    assert plain.exit_code == 0 and as_json.exit_code == 0
    report = json.loads(as_json.stdout)
    check = next(c for c in report["checks"] if c["name"] == "speed")
    assert check["status"] == "warn" and check["detail"].endswith(", past the reply timeout (900 s), which cuts it")
    measured = report["speed"]
    limit = re.fullmatch(r"consider --max-output-tokens (\d+), or a longer --reply-timeout", check["fix"])
    assert limit and about_five_minutes(int(limit[1]), measured["tokens_per_s"]), check["fix"]
    assert measured["output_tokens"] / json_s <= measured["tokens_per_s"] <= 10 and measured["output_tokens"] >= 32
    assert measured["tokens_per_s"] == pytest.approx(measured["output_tokens"] / measured["seconds"], abs=0.06)
    assert measured["reply_at_limit_s"] == pytest.approx(16000 * measured["seconds"] / measured["output_tokens"],
                                                         rel=0.01, abs=1)
    assert len(server.requests) == 6


def about_five_minutes(limit: int, rate: float) -> bool:
    """`limit` is 300 s of output at `rate` tokens/s, to one significant digit (so within 2/3 to 4/3 of it)."""
    return re.fullmatch(r"[1-9]0*", str(limit)) is not None and 0.65 <= limit / (rate * 300) <= 1.35


@pytest.mark.parametrize(("args", "words"), [
    ((), "No model is configured"),
    (("-m", "doctor-nonsense"), "cannot tell which provider"),
    (("-m", "openai/gpt-4o", "--price-in", "1"), "both the input and the output price"),
    (("-m", "openai/gpt-4o", "--reasoning-effort", "extreme"), "--reasoning-effort"),
])
def test_bad_input_exits_2_with_one_paragraph(args: tuple[str, ...], words: str) -> None:
    result = doctor(None, *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("gitswarm: ") and words in result.stderr and result.stderr.count("\n") == 1


def test_the_sandbox_check_warns_where_no_backend_works(portal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ORDER_ENV, "")
    containment.cache_clear()
    try:
        with fake(portal) as server:
            result = doctor(server, "-m", "openai/gpt-4o", "--json")
    finally:
        monkeypatch.undo()
        containment.cache_clear()
    check = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "sandbox")
    assert result.exit_code == 0 and check["status"] == "warn"  # a warning passes: doctor is about the model
    assert "solve refuses code problems" in check["detail"] and "bubblewrap" in check["fix"]


def test_doctor_takes_the_model_part_of_the_config_file_and_no_bound_on_calls(tmp_path, monkeypatch):
    from gitswarm.cli.doctor import model_configs

    config = tmp_path / "gitswarm.toml"
    config.write_text('[solve]\nmodel = "openai/from-file"\nidle_timeout_s = 7\nmax_concurrent_calls = 1\n'
                      'price_in_per_mtok = 1\nprice_out_per_mtok = 2\nprice_cached_in_per_mtok = 0.5\nbudget = 3\n')
    monkeypatch.setenv("GITSWARM_CONFIG", str(config))
    workers, reviewer = model_configs({"reply_timeout_s": 60.0})
    assert (workers.model, workers.idle_timeout_s, workers.reply_timeout_s, workers.price_cached_in_per_mtok) == (
        "openai/from-file", 7, 60.0, 0.5)
    assert workers.max_concurrent_calls is None and reviewer is None  # two calls at once ask the server
