"""Traces in OpenTelemetry: a traced `solve` sends the run, one span per episode and one per
model call (with the ledger's tokens) to a real OTLP/HTTP receiver on 127.0.0.1, each span where
it belongs; untraced, it sends nothing and imports nothing of OpenTelemetry. In CI (slow), Arize
Phoenix receives the same run and gives it back through its API."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import brain_server, git
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.ledger import Ledger
from gitswarm.memory.repo import Memory
from gitswarm.telemetry import wanted

MODEL = "openai/gitswarm-scripted"


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver on 127.0.0.1: keeps every span it is sent, decoded, as a
    dict of its name, ids, parent, times and attributes."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Collect)
        self.spans: list[dict] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Collect(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            self.server.spans += [_decoded(s) for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:
        pass


def _decoded(span) -> dict:
    def value(v):
        kind = v.WhichOneof("value")
        return [value(x) for x in v.array_value.values] if kind == "array_value" else getattr(v, kind)

    return {"name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
            "parent": span.parent_span_id.hex(), "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
            "status": span.status.code, "attributes": {a.key: value(a.value) for a in span.attributes}}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def model_server() -> Iterator[str]:
    """The scripted model's server at full speed."""
    yield from brain_server("0")


def solve_args(problem_dir: Path, run: Path, api_base: str) -> list[str]:
    return ["solve", str(problem_dir), "--run", str(run), "--model", MODEL, "--api-base", api_base,
            "--no-tui", "--json", "--workers", "2", "--verify", "0", "--budget", "3"]


def untraced_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GITSWARM_"))}


def test_a_traced_solve_sends_a_span_per_episode_and_model_call_with_the_ledgers_tokens(
        tmp_path: Path, problem_dir: Path, model_server: str, receiver: Receiver):
    run, config = tmp_path / "run", tmp_path / "gitswarm.toml"
    config.write_text("[solve]\nsummary_every = 1\n")  # the merger's model writes summaries: its calls too
    done = CliRunner().invoke(app, solve_args(problem_dir, run, model_server),
                              env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": None,
                                   "GITSWARM_CONFIG": str(config)})
    assert done.exit_code == 0, done.output
    spans = receiver.spans
    by_id = {s["id"]: s for s in spans}
    [root] = [s for s in spans if not s["parent"]]
    assert root["name"] == "gitswarm run" and {s["trace"] for s in spans} == {root["trace"]}
    assert root["attributes"]["gitswarm.model"] == MODEL and root["attributes"]["gitswarm.reason"]
    ledger = Ledger.load(Memory(run))
    records = {e: r for e, r in ledger.episodes.items() if e != "merger"}
    episodes = {s["attributes"]["gitswarm.episode"]: s for s in spans if s["name"].startswith("episode ")}
    assert len(episodes) == len([s for s in spans if s["name"].startswith("episode ")]) == len(records) >= 2
    calls = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    for episode, record in records.items():
        span = episodes[episode]
        assert span["parent"] == root["id"] and root["start"] <= span["start"] <= span["end"] <= root["end"]
        assert {k: span["attributes"][f"gitswarm.{k}"] for k in ("problem", "worker")} == {
            "problem": record.problem, "worker": record.worker}
        assert span["attributes"].get("gitswarm.commit") == (record.commit or None)
        if record.commit:  # the trace leads back to git log
            said = git(run, "log", "-1", "--format=%(trailers:key=Gitswarm-Episode,valueonly)", record.commit)
            assert said.strip() == episode
        mine = [c for c in calls if c["attributes"].get("gitswarm.episode") == episode]
        assert len(mine) == record.calls
        assert sum(c["attributes"]["gen_ai.usage.input_tokens"] for c in mine) == record.tokens_in
        assert sum(c["attributes"]["gen_ai.usage.output_tokens"] for c in mine) == record.tokens_out
        for call in mine:  # a model call is its step's; the step, its episode's
            step = by_id[call["parent"]]
            assert step["name"] == f"step {call['attributes']['gitswarm.step']}" and step["parent"] == span["id"]
            assert step["start"] <= call["start"] <= call["end"] <= step["end"]
    committed = [e for e, r in records.items() if r.commit]
    assert committed, "the scripted model commits"
    merger = ledger.episodes.get("merger")
    merged_calls = [c for c in calls if c["attributes"].get("gitswarm.worker") == "merger"]
    assert merger is not None and len(merged_calls) == merger.calls > 0
    assert sum(c["attributes"]["gen_ai.usage.input_tokens"] for c in merged_calls) == merger.tokens_in
    assert all(c["parent"] == root["id"] for c in merged_calls)
    first = calls[0]["attributes"]
    assert first["gen_ai.request.model"] == "gitswarm-scripted" and first["gen_ai.provider.name"] == "openai"
    assert all(c["name"] == "chat gitswarm-scripted" for c in calls)
    tools = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    assert tools and all(by_id[t["parent"]]["name"].startswith("step ") for t in tools)
    assert all(t["name"] == f"execute_tool {t['attributes']['gen_ai.tool.name']}" for t in tools)
    finals = Counter(t["attributes"]["gen_ai.tool.name"] for t in tools)
    assert finals["contribute"] + finals["nominate"] >= len(committed)


def test_an_untraced_solve_sends_nothing_and_imports_no_opentelemetry(
        tmp_path: Path, problem_dir: Path, model_server: str, receiver: Receiver):
    script = ("import sys\nfrom gitswarm.cli.main import app\ntry:\n    app()\nfinally:\n"
              "    print('otel:', sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry'))\n")
    done = subprocess.run([sys.executable, "-c", script, *solve_args(problem_dir, tmp_path / "run", model_server)],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path, env=untraced_env())
    assert done.returncode == 0, done.stderr
    assert "otel: []" in done.stdout.splitlines()[-1]
    assert receiver.spans == []


@pytest.mark.parametrize(("env", "asks"), [
    ({}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h/v1/traces"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_SDK_DISABLED": "true"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_TRACES_EXPORTER": "none"}, None),
    ({"OTEL_SERVICE_NAME": "gitswarm"}, None),
])
def test_only_an_otlp_endpoint_turns_tracing_on(env: dict, asks: str | None):
    assert wanted(env) == asks


PHOENIX_HTTP_ONLY = """
import sys
import phoenix.server.grpc_server as grpc_server
opened = grpc_server.GrpcServer.__init__
def http_only(self, *args, **kwargs):  # its gRPC collector binds every interface: off
    opened(self, *args, **{**kwargs, "disabled": True})
grpc_server.GrpcServer.__init__ = http_only
from phoenix.server.main import main
sys.argv = ["phoenix", "serve"]
sys.exit(main())
"""


def phoenix_python() -> str:
    """A Python with arize-phoenix: GITSWARM_TEST_PHOENIX (.ci/run installs it in a venv of its
    own), else this one if it has it. Skips without one; fails in CI (CI=true)."""
    given = os.environ.get("GITSWARM_TEST_PHOENIX")
    if given:
        return given
    if subprocess.run([sys.executable, "-c", "import phoenix.server.main"], capture_output=True).returncode == 0:
        return sys.executable
    reason = "Arize Phoenix is not installed: give GITSWARM_TEST_PHOENIX, a Python with arize-phoenix"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}. CI must run it (CI=true).", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def healthy(base: str) -> bool | None:
    with urllib.request.urlopen(f"{base}/healthz", timeout=10) as answer:
        return True if answer.status == 200 else None


@pytest.mark.slow  # Phoenix starts in ~20 s (its database made), installs in ~70 s (~850 MB)
def test_phoenix_shows_a_traced_run(tmp_path: Path, problem_dir: Path, model_server: str):
    python, port = phoenix_python(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**untraced_env(), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # asks nothing of the net
           "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix")}
    with (tmp_path / "phoenix.log").open("w") as log:
        phoenix = subprocess.Popen([python, "-c", PHOENIX_HTTP_ONLY], env=env, stdout=log, stderr=log)
    try:
        _wait(lambda: healthy(base), 120, phoenix)
        run = tmp_path / "run"
        done = CliRunner().invoke(app, solve_args(problem_dir, run, model_server),
                                  env={"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_SERVICE_NAME": None})
        assert done.exit_code == 0, done.output
        records = Ledger.load(Memory(run)).episodes  # the merger's too
        episodes, calls = len(records) - ("merger" in records), sum(r.calls for r in records.values())
        spans = _wait(lambda: _all_spans(base, episodes + calls), 60, phoenix)
    finally:
        phoenix.terminate()
        phoenix.wait(timeout=30)
    kinds = Counter(s["span_kind"] for s in spans)
    assert kinds["AGENT"] == episodes and kinds["LLM"] == calls  # from the GenAI conventions
    llm = [s["attributes"] for s in spans if s["span_kind"] == "LLM"]
    assert sum(a["llm.token_count.prompt"] for a in llm) == sum(r.tokens_in for r in records.values())
    assert sum(a["llm.token_count.completion"] for a in llm) == sum(r.tokens_out for r in records.values())


def _all_spans(base: str, at_least: int) -> list[dict] | None:
    """Every span of Phoenix's default project, once it holds `at_least` spans of an episode
    or a model call (it stores what it is sent in batches)."""
    spans, cursor = [], ""
    while True:
        page = get(f"{base}/v1/projects/default/spans?limit=1000{cursor}")
        spans += page["data"]
        if not page.get("next_cursor"):
            break
        cursor = f"&cursor={page['next_cursor']}"
    return spans if sum(s["span_kind"] in ("AGENT", "LLM") for s in spans) >= at_least else None


def _wait(probe, seconds: float, process: subprocess.Popen):
    """`probe()`'s first answer that is not None within `seconds` (a refused connection is none)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "Phoenix exited; its log is phoenix.log in the test's folder"
        try:
            found = probe()
        except OSError:
            found = None
        if found is not None:
            return found
        time.sleep(0.5)
    raise AssertionError(f"nothing within {seconds} s")
