"""`--isolation independent`: each episode sees only its problem's statement, the baseline an
experiment compares the swarm with; answers are selected by their majority. The real engine
against the fake server, the transcripts and the requests read back."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from conftest import git

from gitswarm.core.stops import StopReason
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.majority import tally
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set

MARK = re.compile(r"MARK-\d+")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def marking():
    """A model that writes an attempt carrying a mark of its own (answer 7 twice out of three
    times, else 8), then contributes it; it tries to read others' work and to review first."""
    made: list[str] = []

    def respond(request: dict) -> FakeReply:
        messages = request["messages"]
        step = sum(m["role"] == "assistant" for m in messages)
        if step == 0:
            return FakeReply(tool_calls=[{"name": "list_items", "arguments": {}},
                                         {"name": "search", "arguments": {"query": "MARK"}},
                                         {"name": "in_flight", "arguments": {}}])
        if step == 1:
            mark = f"MARK-{len(made)}"
            made.append(mark)
            answer = 8 if len(made) % 3 == 0 else 7
            return FakeReply(tool_calls=[{"name": "write_file", "arguments": {
                "path": f"attempts/{mark.lower()}.md", "content": f"{mark}: 3 + 4.\n\nAnswer: {answer}\n"}}])
        return FakeReply(tool_calls=[{"name": "contribute", "arguments": {
            "kind": "attempt", "title": "3 + 4", "summary": "Added."}}])
    return respond


@pytest.mark.anyio
async def test_independent_episodes_see_no_other_work_and_answers_are_selected_by_majority(
        tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    async with serve(marking()) as server:
        config = ModelConfig(model="openai/gitswarm-fake", api_base=server.url, api_key="k", reply_timeout_s=5)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problem_dir, run=run, model=config.model, workers=3, budget=6,
                          isolation="independent", problem_ids=("sum",))
        with anyio.fail_after(120):
            result = await solve(cfg, load_set(problem_dir), model, model)
    assert result.reason.reason is StopReason.BUDGET and result.charged == 6
    for request in server.requests:
        if not request.get("tools"):
            continue  # the merger's
        seen = set(MARK.findall(str(request["messages"])))
        assert len(seen) <= 1, seen  # at most the episode's own attempt, never another's
    first = [r for r in server.requests if r.get("tools") and len(r["messages"]) == 2]
    assert first and all("made independently" in r["messages"][1]["content"] for r in first)
    results = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("there is no tool 'list_items'" in r for r in results)  # an isolated attempt has no memory to list
    assert any("there is no tool 'in_flight'" in r for r in results)  # nor anyone to see
    solution = git(run, "show", "main:problems/sum/SOLUTION.md")
    assert "majority of answers: 4 of 6 attempts answer 7" in solution and "Answer: 7" in solution
    assert result.selected["sum"] is not None and not result.selected["sum"].verified


def test_equivalent_answers_vote_together_and_the_first_group_wins_a_tie():
    groups = tally([("a", "1", "3/4"), ("b", "2", "1/2"), ("c", "3", "0.75"), ("d", "4", "0.5")])
    assert [(g.answer, g.paths) for g in groups] == [("3/4", ["a", "c"]), ("1/2", ["b", "d"])]
