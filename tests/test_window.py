"""The context policy of a long episode (`engine.window`), through the real engine, litellm and
the fake server: what the model is sent stays bounded, the problem and the newest state block
stay whole, a compaction's account carries the staged files, and the transcript and the
conversation record keep every tool output whole with the trims marked."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory.conversations import read_conversation
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.repo import Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

PROBLEM = "demo-odd-sum"
STEP = re.compile(r"step (\d+) of (\d+)")
BODY = "The sum of the first n odd numbers is n squared.\n" * 160  # 8,000 characters
STAGED = "# Odd sums\n\nThe sum of the first $n$ odd numbers is $n^2$.\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _text(m: dict) -> str:
    content = m.get("content") or ""
    return "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)


class LongEpisode:
    """Stages a note, writes an 8 KB file and reads it back every step, contributes at the last;
    keeps every request it got."""

    def __init__(self) -> None:
        self.requests: list[list[dict]] = []

    def __call__(self, request: dict) -> FakeReply:
        messages = request["messages"]
        self.requests.append(messages)
        if "Reply with text only" in _text(messages[-1]):
            return FakeReply(content="Done: staged notes/odd.md; read notes/big.md each step. Next: contribute.")
        found = [s for m in messages if m["role"] == "user" and (s := STEP.search(_text(m)))]
        step, last = int(found[-1].group(1)), int(found[-1].group(2))
        calls = {1: ("write_file", {"path": "notes/odd.md", "content": STAGED}),
                 2: ("write_file", {"path": "notes/big.md", "content": BODY})}
        name, arguments = calls.get(step, ("read_file", {"path": "notes/big.md"}) if step < last else
                                    ("contribute", {"kind": "note", "title": "odd sums", "summary": "squares"}))
        return FakeReply(tool_calls=[{"name": name, "arguments": arguments}])


async def long_episode(tmp_path: Path, steps: int, **policy) -> tuple[LongEpisode, Path]:
    problems, script = resolve_set("demo"), LongEpisode()
    async with serve(script) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k", reply_timeout_s=10)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=tmp_path / "run", model=config.model, workers=1, verify=0,
                          budget=1, max_episodes=1, problem_ids=(PROBLEM,), max_steps=steps, **policy)
        with anyio.fail_after(120):
            await solve(cfg, load_set(problems), model, model)
    return script, tmp_path / "run"


@pytest.mark.anyio
async def test_a_long_episode_is_sent_a_bounded_context_and_keeps_everything(tmp_path: Path):
    script, run = await long_episode(tmp_path, 40)
    record = Ledger.load(Memory(run)).episodes["e00001"]
    assert record.status == "contribute" and record.compactions >= 1 and record.stubbed >= 1
    sent = [sum(len(_text(m)) for m in r) for r in script.requests]
    assert max(sent[10:]) < 2 * 0.6 * 32000 * 4  # bounded near compact_at of the window, not growing
    first = script.requests[0][1]["content"]
    assert all(r[1]["content"] == first and r[0] == script.requests[0][0] for r in script.requests)  # stable prefix
    last = script.requests[-1]
    assert "step 40 of 40" in _text(last[-1]) and "<context-account>" in _text(last[2])
    assert STAGED.strip() in _text(last[2])  # the staged note, whole, in the account
    assert any("trimmed from the context: the output of read_file" in _text(m) for r in script.requests for m in r)
    assert all("its state block is superseded" in _text(m) for m in last[3:-1] if m["role"] == "user")
    # the conversation record: the requests as the model saw them, and every output whole
    kept = read_conversation(GitReader(run), "e00001")
    assert kept is not None and kept["trims"] and {t["kind"] for t in kept["trims"]} == {"stub", "compact"}
    assert sum(BODY[:4000] in text for text in kept["outputs"].values()) >= 20
    # `gitswarm log --episode`: every output whole, and where the context was trimmed and by what
    shown = CliRunner().invoke(app, ["log", str(run), "--episode", "e00001"])
    assert shown.exit_code == 0, shown.output
    assert "### context (step" in shown.output and "replaced by an account the model wrote" in shown.output
    assert shown.output.count(BODY[:200]) >= 20
    assert "input tokens per call: " in shown.output and f"{record.compactions} compaction(s)" in shown.output
    # the report: input per call, the cached share, compactions per episode
    text = CliRunner().invoke(app, ["report", str(run)]).output
    assert f"{record.compactions} compaction(s) in 1 episode(s), {record.stubbed} batch(es)" in text
    assert f"the largest {max(record.calls_in):,} (e00001 step" in text


@pytest.mark.anyio
async def test_with_the_policy_off_every_step_sends_the_whole_conversation(tmp_path: Path):
    script, run = await long_episode(tmp_path, 8, trim_context=False, context_window=8000)
    record = Ledger.load(Memory(run)).episodes["e00001"]
    assert (record.compactions, record.stubbed) == (0, 0) and len(record.calls_in) == 8
    assert record.calls_in == sorted(record.calls_in) and record.calls_in[-1] > 5 * 2000
    assert sum(_text(m).count(BODY[:200]) for m in script.requests[-1]) >= 5
