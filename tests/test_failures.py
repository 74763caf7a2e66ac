"""Failures have classes, each with its own rule, and one bad episode never ends the run: the
real engine against the fake server (or, for a failure inside gitswarm, a model double that
raises what no model client should), real git repositories, the real CLI to read the run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from test_episode_replies import CONTRIBUTE, WRITE, call, one_episode, said
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.core.events import RUN_LOG
from gitswarm.core.stops import StopReason
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, FaultPlan, serve
from gitswarm.memory.errors import ContributionRefused
from gitswarm.memory.repo import Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.models.reply import Reply, ToolCall
from gitswarm.problems.loader import load_set
from gitswarm.usage import Usage


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def run_with(problem_dir: Path, run: Path, responder, faults: FaultPlan | None = None, **options):
    """`problem_dir` solved into `run` by `responder` behind the fake server; the RunResult."""
    async with serve(responder, faults) as server:
        config = ModelConfig(model="openai/gitswarm-fake", api_base=server.url, api_key="k", reply_timeout_s=5,
                             backoff_base_s=0.01, backoff_cap_s=0.05)
        model = LiteLLMModel(config)
        problem_set = load_set(problem_dir)
        cfg = SolveConfig.for_set(problem_set, run, model=config.model, verify=0, **options)
        with anyio.fail_after(120):
            return await solve(cfg, problem_set, model, model)


def records(run: Path) -> list:
    return [r for key, r in sorted(Ledger.load(Memory(run)).episodes.items()) if key != "merger"]


def reader(request: dict) -> FakeReply:
    """A model that answers every step and never ends its episode: it reads the summary."""
    return FakeReply(tool_calls=[{"name": "read_file", "arguments": {"path": "SUMMARY.md"}}])


@pytest.mark.anyio
async def test_step_limits_in_a_row_are_the_models_failures_and_stop_by_the_no_progress_rule(
        tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    result = await run_with(problem_dir, run, reader, workers=3, budget=5, max_steps=2, no_progress=2)
    assert result.reason.reason is StopReason.NO_PROGRESS, result.reason.detail
    ended = records(run)
    assert len(ended) >= 6 and {(r.status, r.failure) for r in ended} == {("failed", "model")}
    assert all("step limit" in r.note for r in ended)  # more than 3 (= max(3, workers)) in a row
    status = json.loads(CliRunner().invoke(app, ["status", str(run), "--json"]).output)
    assert status["totals"]["failed_episodes"] == {"provider": 0, "model": len(ended), "engine": 0,
                                                         "context": 0}


@pytest.mark.anyio
async def test_a_server_that_drops_every_connection_stops_the_run_as_the_providers_failing(
        tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    result = await run_with(problem_dir, run, reader, FaultPlan(rate=1.0, kinds=("reset",)), workers=1, budget=5)
    assert result.reason.reason is StopReason.PROVIDER_FAILING
    detail = result.reason.detail
    assert "3 episodes in a row failed because the model provider did not answer" in detail
    assert "the last error:" in detail and "connection" in detail.lower() and "gitswarm doctor" in detail
    assert {(r.status, r.failure) for r in records(run)} == {("failed", "provider")}
    table = CliRunner().invoke(app, ["status", str(run)]).output
    assert "failed episodes: 3 provider, 0 model, 0 engine" in table


class Exploding:
    """A model double whose client raises what none should (a bug, not a ModelError) on the
    calls numbered in `bad`; the others abstain."""

    output_limit = 1000
    protocol = "native"

    def __init__(self, bad: set[int]) -> None:
        self.bad, self.calls = bad, 0

    def may_force_tools(self) -> bool:
        return False

    async def complete(self, messages, tools=None, *, tool_choice=None, on_retry=None, on_cut=None) -> Reply:
        self.calls += 1
        if self.calls in self.bad:
            raise RuntimeError(f"boom in call {self.calls}")
        call = ToolCall(f"call_{self.calls}", "abstain", {"reason": "nothing to add"}, '{"reason": "nothing to add"}')
        message = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": call.id, "type": "function",
                                   "function": {"name": "abstain", "arguments": call.raw_arguments}}]}
        return Reply("", [call], Usage.of_call(10, 5, 0.0), "tool_calls", message)


async def run_exploding(problem_dir: Path, run: Path, model: Exploding, **options):
    problem_set = load_set(problem_dir)
    cfg = SolveConfig.for_set(problem_set, run, model="openai/double", verify=0, workers=1, **options)
    with anyio.fail_after(60):
        return await solve(cfg, problem_set, model, model)


@pytest.mark.anyio
async def test_an_error_inside_one_episode_fails_it_alone_and_the_run_goes_on(tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    result = await run_exploding(problem_dir, run, Exploding({1}), budget=2, max_episodes=3)
    assert result.reason.reason is StopReason.EPISODE_CAP
    first, *rest = records(run)
    assert (first.status, first.failure) == ("failed", "engine")
    assert "engine error: RuntimeError: boom in call 1" in first.note and RUN_LOG in first.note
    assert [(r.status, r.failure) for r in rest] == [("abstain", ""), ("abstain", "")]
    log = (run / RUN_LOG).read_text()
    assert "engine error in episode e00001" in log and "Traceback" in log and "boom in call 1" in log


@pytest.mark.anyio
async def test_engine_errors_in_a_row_trip_the_circuit_breaker_which_names_the_log(
        tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    result = await run_exploding(problem_dir, run, Exploding(set(range(1, 100))), budget=10)
    assert result.reason.reason is StopReason.ENGINE_ERRORS
    assert str(run / RUN_LOG) in result.reason.detail and "resumes" in result.reason.detail
    assert [r.failure for r in records(run)] == ["engine"] * 3
    assert (run / RUN_LOG).read_text().count("Traceback") == 3


@pytest.mark.anyio
async def test_every_episode_keeps_its_transcript_and_log_shows_it(tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    await run_exploding(problem_dir, run, Exploding({1}), budget=1, max_episodes=2)
    failed, abstained = records(run)
    assert failed.transcript and abstained.transcript and not failed.commit
    kept = subprocess.run(["git", "-C", str(run), "show", abstained.transcript], check=True, capture_output=True,
                          text=True).stdout
    assert "### assistant" in kept and "-> abstain(" in kept
    shown = CliRunner().invoke(app, ["log", str(run), "--episode", failed.episode])
    assert shown.exit_code == 0, shown.output
    assert f"episode {failed.episode}" in shown.output and "failed (engine)" in shown.output
    assert "--- transcript (git show refs/gitswarm/transcripts:" in shown.output and "### system" in shown.output
    missing = CliRunner().invoke(app, ["log", str(run), "--episode", "e99999"])
    assert missing.exit_code == 2 and "no episode 'e99999'" in missing.output


def sloppy(request: dict) -> FakeReply:
    """What small models send, one step after another: a list for a string, a final action
    missing a required field with an unknown one, a call leaked into the text as Hermes/Qwen
    write it, then a contribution with a number for its title and review fields on a note."""
    step = sum(m["role"] == "assistant" for m in request["messages"])
    if step == 0:
        return FakeReply(tool_calls=[{"name": "write_file", "arguments": {"path": "notes/a.md", "content": ["x"]}}])
    if step == 1:
        return FakeReply(tool_calls=[{"name": "contribute", "arguments": {"kind": "note", "title": "t", "mood": "ok"}}])
    if step == 2:
        leaked = {"name": "write_file", "arguments": {"path": "notes/a.md", "content": "Observed: 3 + 4 = 7.\n"}}
        return FakeReply(content=f"I will stage the note.\n<tool_call>\n{json.dumps(leaked)}\n</tool_call>")
    return FakeReply(tool_calls=[{"name": "contribute", "arguments": {
        "kind": "note", "title": 7, "summary": "A check.", "reviews": "attempts/x.md", "verdict": "pass",
        "confidence": "high"}}])


@pytest.mark.anyio
async def test_a_sloppy_model_ends_every_episode_in_a_named_way_and_the_run_by_its_rule(
        tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    async with serve(sloppy) as server:
        config = ModelConfig(model="openai/gitswarm-fake", api_base=server.url, api_key="k", reply_timeout_s=5,
                             backoff_base_s=0.01)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problem_dir, run=run, model=config.model, verify=0, workers=2, budget=3)
        with anyio.fail_after(120):
            result = await solve(cfg, load_set(problem_dir), model, model)
    assert result.reason.reason is StopReason.BUDGET
    assert {r.status for r in records(run)} == {"contribute"}
    results = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("`content`" in text and "list" in text for text in results)  # the field, and what came
    assert any("`summary`" in text for text in results)
    assert not (run / RUN_LOG).exists()


def abstainer(request: dict) -> FakeReply:
    return FakeReply(tool_calls=[{"name": "abstain", "arguments": {"reason": "nothing to add"}}])


@pytest.mark.anyio
async def test_a_stream_cut_early_is_retried_and_each_retry_is_said(tmp_path: Path, problem_dir: Path, capsys):
    from gitswarm.cli.progress import printer
    from gitswarm.core.event_types import Retry
    from gitswarm.engine.events import read_events

    run = tmp_path / "run"
    faults = FaultPlan.first("truncated_stream", "truncated_stream")
    result = await run_with(problem_dir, run, abstainer, faults, workers=1, budget=1, max_episodes=1)
    assert result.reason.reason is StopReason.EPISODE_CAP
    retries = [e for e in read_events(run) if isinstance(e, Retry)]
    assert [(e.episode, e.attempt, e.error) for e in retries] == [
        ("e00001", 1, "stream_cut"), ("e00001", 2, "stream_cut")]
    show = printer()
    for event in retries:
        show(event)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("e00001 w01: the server ended the reply early (1st time); retrying in ")
    assert lines[1].startswith("e00001 w01: the server ended the reply early (2nd time); retrying in ")
    assert records(run)[0].status == "abstain"


def failing_once(monkeypatch, error: Exception, op: str = "-final") -> None:
    """The memory raises `error` on the episode's first commit of an op ending in `op` (its final
    action's, or `-incomplete`: the note of what a failed episode staged), else commits as usual."""
    contribute, raised = Memory.contribute, []

    def once(memory: Memory, contribution):
        if contribution.op.endswith(op) and not raised:
            raised.append(error)
            raise error
        return contribute(memory, contribution)

    monkeypatch.setattr(Memory, "contribute", once)


@pytest.mark.anyio
async def test_a_refused_contribution_goes_back_to_the_model_which_contributes_again(tmp_path: Path, monkeypatch):
    failing_once(monkeypatch, ContributionRefused("informed_by 'f00d' is not a commit of this run"))
    replies = [FakeReply(tool_calls=[WRITE]), FakeReply(tool_calls=[CONTRIBUTE]), FakeReply(tool_calls=[CONTRIBUTE])]
    record, server, _ = await one_episode(tmp_path, replies)
    assert "error: the contribution was refused: informed_by 'f00d' is not a commit" in said(server, 2)
    assert (record.status, record.failure) == ("contribute", "") and record.commit


@pytest.mark.anyio
async def test_a_value_error_of_a_bug_is_not_told_to_the_model_but_fails_the_episode_as_the_engines(
        tmp_path: Path, monkeypatch):
    """A plain ValueError is a bug, not a refusal (once, any ValueError while committing was
    told to the model as "the contribution was refused")."""
    failing_once(monkeypatch, ValueError("a bug deep in the memory"))
    replies = [FakeReply(tool_calls=[WRITE]), FakeReply(tool_calls=[CONTRIBUTE]), FakeReply(tool_calls=[CONTRIBUTE])]
    record, server, run = await one_episode(tmp_path, replies)
    assert len(server.requests) == 2 and "refused" not in said(server, 1)  # the model was told nothing
    assert (record.status, record.failure) == ("failed", "engine")
    assert "engine error: ValueError: a bug deep in the memory" in record.note and RUN_LOG in record.note
    assert f"its staged files are kept in notes/incomplete-{record.episode}.md" in record.note
    assert "Traceback" in (run / RUN_LOG).read_text()


@pytest.mark.anyio
async def test_a_bug_while_keeping_a_failed_episodes_staged_files_fails_it_alone_as_the_engines(
        tmp_path: Path, monkeypatch):
    failing_once(monkeypatch, ValueError("a bug deep in the memory"), op="-incomplete")
    replies = [FakeReply(tool_calls=[WRITE]), FakeReply(tool_calls=[call("list_items", {})])]
    record, _, run = await one_episode(tmp_path, replies, max_steps=2)
    assert (record.status, record.failure) == ("failed", "engine") and "step limit (2)" in record.note
    assert "its staged files were not kept: engine error: ValueError: a bug deep in the memory" in record.note
    assert "Traceback" in (run / RUN_LOG).read_text()
