"""The lossless record of each episode (`engine.conversation`): every call as litellm got and
returned it, through the real engine, litellm and the fake server; no key and no hidden text in it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pygit2
import pytest
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.demo import audit
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.conversation import encoded
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeError, FakeReply, ScriptedResponder, serve
from gitswarm.memory.conversations import (
    CONVERSATIONS_REF,
    all_conversations,
    read_conversation,
    restored,
)
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.repo import Memory
from gitswarm.models.calls import CallLog
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.remote import layout
from gitswarm.resources import resolve_set

PROBLEM = "demo-odd-sum"
KEY = "sk-test-conversation-0123456789abcdef"
NOTE = "# Odd sums\n\nThe sum of the first $n$ odd numbers is $n^2$.\n"
WRITE = {"name": "write_file", "arguments": {"path": "notes/odd.md", "content": NOTE}}
CONTRIBUTE = {"name": "contribute", "arguments": {"kind": "note", "title": "odd sums are squares",
                                                   "summary": "By induction."}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def one_episode(run: Path, replies: list, *, personality: str = "openai",
                      model_name: str = "openai/gitswarm-scripted", secret: bytes | None = None, **settings):
    """One episode on one demo problem, scripted reply by reply; returns the fake server
    (`secret`: the key it signs thinking with)."""
    problems = resolve_set("demo")
    async with serve(ScriptedResponder(replies), personality=personality, secret=secret) as server:
        config = ModelConfig(model=model_name, api_base=server.url, api_key=KEY, max_output_tokens=4096,
                             reply_timeout_s=5, backoff_base_s=0.01, **settings)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=run, model=config.model, workers=1, verify=0, budget=1,
                          max_episodes=1, problem_ids=(PROBLEM,))
        with anyio.fail_after(60):
            await solve(cfg, load_set(problems), model, model)
    return server


def book_bytes(run: Path) -> bytes:
    """Every blob ever written to the conversations ref, as stored."""
    repo = pygit2.Repository(str(run))
    found: dict[pygit2.Oid, bytes] = {}
    for commit in repo.walk(repo.references[CONVERSATIONS_REF].target):
        found |= dict(blobs(repo, commit.tree))
    return b"".join(found.values())


def blobs(repo: pygit2.Repository, tree: pygit2.Tree):
    for entry in tree:
        obj = repo[entry.id]
        yield from blobs(repo, obj) if entry.type_str == "tree" else [(entry.id, obj.data)]


@pytest.mark.anyio
async def test_an_episode_keeps_every_call_as_sent_and_returned(tmp_path: Path):
    flaky = FakeError(500, "the server had an error")
    server = await one_episode(tmp_path / "run", [flaky, FakeReply(tool_calls=[WRITE]),
                                                  FakeReply(tool_calls=[CONTRIBUTE])])
    conv = read_conversation(GitReader(tmp_path / "run"), "e00001")
    assert conv is not None and conv["version"] == 1 and conv["outcome"] == "contribute"
    assert (conv["episode"], conv["problem"], conv["worker"]) == ("e00001", PROBLEM, "w01")
    assert conv["params"].items() >= {"model": "openai/gitswarm-scripted", "max_output_tokens": 4096,
                                      "tool_protocol": "native", "reasoning_effort": None}.items()
    assert conv["tools"] == server.requests[0]["tools"]
    calls = conv["calls"]
    assert len(calls) == len(server.requests) == 3  # the failed attempt, then two replies
    for call, sent in zip(calls, server.requests, strict=True):
        assert call["request"]["messages"] == sent["messages"]
        assert call["request"]["max_tokens"] == 4096 and "api_key" not in call["request"]
        assert call["started"] <= call["ended"]
    assert calls[0]["error"].startswith("server") and calls[0]["reply"] is None
    write, contribute = calls[1], calls[2]
    assert write["error"] is None and write["reply"]["finish_reason"] == "tool_calls"
    [made] = write["reply"]["tool_calls"]
    assert made["name"] == "write_file" and json.loads(made["arguments"]) == WRITE["arguments"]
    # The ids the model sent are the ids the next request answers, in the assistant turn and its tool result.
    turn, result = contribute["request"]["messages"][-3:-1]
    assert [c["id"] for c in turn["tool_calls"]] == [made["id"]] and result["tool_call_id"] == made["id"]
    assert write["reply"]["read_calls"][0]["id"] == made["id"]
    assert write["usage"]["input_tokens"] > 0 and write["usage"]["output_tokens"] > 0
    assert contribute["reply"]["tool_calls"][0]["name"] == "contribute"
    assert KEY.encode() not in book_bytes(tmp_path / "run")
    assert [c["episode"] for c in all_conversations(GitReader(tmp_path / "run"))] == ["e00001"]


@pytest.mark.anyio
async def test_thinking_blocks_and_their_signatures_are_kept(tmp_path: Path):
    reply = FakeReply(tool_calls=[CONTRIBUTE], thinking="Odd numbers add up to squares.")
    await one_episode(tmp_path / "run", [FakeReply(tool_calls=[WRITE]), reply], personality="anthropic",
                      model_name="anthropic/claude-sonnet-4-5", reasoning_effort="low")
    conv = read_conversation(GitReader(tmp_path / "run"), "e00001")
    assert conv["params"]["reasoning_effort"] == "low" and conv["calls"][-1]["request"]["reasoning_effort"] == "low"
    [block] = conv["calls"][-1]["reply"]["thinking"]
    assert block["thinking"] == "Odd numbers add up to squares." and block["signature"]
    assert conv["calls"][-1]["reply"]["tool_calls"][0]["id"]


@pytest.mark.anyio
async def test_a_key_quoted_by_an_error_is_not_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    other = "env-key-of-another-provider-42"
    monkeypatch.setenv("GITSWARM_TEST_API_KEY", other)
    refused = FakeError(401, f"Incorrect API key provided: {KEY} (nor {other}).", kind="authentication_error")
    await one_episode(tmp_path / "run", [refused])
    conv = read_conversation(GitReader(tmp_path / "run"), "e00001")
    assert conv["outcome"] == "failed" and conv["calls"][0]["error"].count("[redacted]") == 2
    assert KEY.encode() not in book_bytes(tmp_path / "run") and other.encode() not in book_bytes(tmp_path / "run")


def test_the_demo_keeps_a_record_of_every_episode_without_its_key_or_hidden_parts(tmp_path: Path):
    run = tmp_path / "demo"
    done = CliRunner().invoke(app, ["demo", "--run", str(run), "--no-tui", "--json"])
    assert done.exit_code == 0, done.output
    repo = GitReader(run)
    ledger = Ledger.load(Memory(run))
    ran = {e: r for e, r in ledger.episodes.items() if r.calls and e != "merger"}  # the merger: no episode
    assert len(ran) > 10
    for episode, record in ran.items():
        conv = read_conversation(repo, episode)
        assert conv is not None, episode
        assert len(conv["calls"]) == record.calls and conv["outcome"] == record.status
        assert sum(c["usage"]["input_tokens"] for c in conv["calls"]) == record.tokens_in
    assert {c["episode"] for c in all_conversations(repo)} >= set(ran)
    data = book_bytes(run)
    assert b"demo-key-not-secret" not in data
    demo = load_set(resolve_set("demo"))
    public = audit.public_text(demo)
    text = data.decode("utf-8", "replace")
    for problem in demo.problems:
        for hidden in problem.hidden_texts():
            for needle in {hidden.strip()} | {ln.strip() for ln in hidden.splitlines()}:
                if len(needle) >= 12 and needle not in public and not needle.startswith(("import ", "from ", "def ")):
                    assert needle not in text, f"{problem.id}: {needle[:70]!r}"
    sizes = [len(json.dumps(c).encode()) for c in all_conversations(repo)]
    print(f"conversation records: {len(sizes)}, {sum(sizes) // len(sizes)} bytes each on average as read, "
          f"{len(data) // len(sizes)} as stored")


@pytest.mark.e2e  # a coordinator and a worker (3 slots, so that verify 2 can be met) in processes: two minutes
def test_a_remote_worker_pushes_its_records_and_the_run_reads_them(tmp_path: Path, model_server: str):
    from test_remote_run import cli, coordinator, env, finish, server_repo

    remote = server_repo(tmp_path / "run.git")
    url = f"file://{remote}"
    coord = coordinator(url, tmp_path / "mirror", model_server)
    one = subprocess.Popen(cli("worker", url, "--name", "solo", "--workers", "3", "--model", "openai/gitswarm-scripted",
                               "--api-base", model_server, "--dir", str(tmp_path / "solo"), "--references", "demo",
                               "--patience", "60"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=env())
    code, _, err = finish(coord, 300)
    assert code == 0, err
    assert finish(one)[0] == 0
    pushed = layout.worker_ref("solo", CONVERSATIONS_REF)
    assert pygit2.Repository(str(remote)).references.get(pushed) is not None
    mirror = GitReader(tmp_path / "mirror")
    ran = {e: r for e, r in Ledger.load(Memory(tmp_path / "mirror")).episodes.items() if r.calls and e != "merger"}
    assert ran
    for episode, record in ran.items():
        conv = read_conversation(mirror, episode)
        assert conv is not None and conv["worker"] == record.worker and len(conv["calls"]) == record.calls
    assert {c["episode"] for c in all_conversations(mirror)} == set(ran)


def test_a_run_without_records_reads_none(memory: Memory):
    assert read_conversation(memory.reader(), "e00001") is None
    assert list(all_conversations(memory.reader())) == []


def test_messages_are_kept_as_deltas_and_read_back_whole():
    system, user = {"role": "system", "content": "s"}, {"role": "user", "content": "u"}
    turn = {"role": "assistant", "content": "a"}
    sent = [[system, user], [system, user, turn, user], [{"role": "system", "content": "other"}, user]]
    log = CallLog()
    kept = {"calls": [{"request": log.delta(messages)} for messages in sent]}
    assert [c["request"]["kept"] for c in kept["calls"]] == [0, 2, 0]
    assert [len(c["request"]["messages"]) for c in kept["calls"]] == [2, 2, 2]
    assert restored(kept) == {"calls": [{"request": {"messages": messages}} for messages in sent]}


@pytest.mark.anyio
async def test_a_text_protocol_call_is_kept_as_the_text_sent(tmp_path: Path):
    prose = FakeReply(content="Let me think about the parity of the sum first.")
    await one_episode(tmp_path / "run", [prose] * 4)  # two in prose: the client turns to the text protocol
    conv = read_conversation(GitReader(tmp_path / "run"), "e00001")
    assert conv["params"]["tool_protocol"] == "native" and conv["outcome"] == "failed"
    assert [c["request"]["protocol"] for c in conv["calls"]] == ["native", "native", "text", "text"]
    text = conv["calls"][2]["request"]
    assert "tools" not in text and "<call name=" in text["messages"][0]["content"]
    assert conv["calls"][1]["request"]["tool_choice"] == "required"


def test_a_record_is_stored_compact_and_reads_back_whole_but_its_secrets():
    secret = 'sk-"quoted"\\key-∑-12345'
    record = {"episode": "e00001", "calls": [{"error": f"bad key {secret}", "reply": {"content": "∑ n² \ud800 ok"}}],
              "z": [1.5, None, True], "a": {"nested": secret}}
    stored = encoded(record, [secret, "short"])
    assert stored.isascii() and b"\n" not in stored and b": " not in stored  # compact, one line
    back = json.loads(stored)
    assert back["calls"][0]["reply"]["content"] == "∑ n² \ud800 ok" and back["z"] == [1.5, None, True]
    assert back["calls"][0]["error"] == "bad key [redacted]" and back["a"] == {"nested": "[redacted]"}
    assert list(back) == sorted(back)
