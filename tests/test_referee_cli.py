"""`gitswarm grade` through typer's runner, with the judge on the fake server in a portal thread."""

from __future__ import annotations

from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from conftest import write_set
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.fakeserver import FakeError, FakeReply, ScriptedResponder, serve
from gitswarm.memory import trees
from gitswarm.memory.repo import Memory
from gitswarm.memory.write import committer
from gitswarm.problems.frontmatter import render
from gitswarm.problems.loader import load_set

runner = CliRunner()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Memory, Path]:
    folder = write_set(tmp_path / "set")
    memory = Memory.create(tmp_path / "run", load_set(folder), run_id="cli-run")
    return memory, folder


def nominate(memory: Memory, problem: str, path: str, text: str, episode: str) -> str:
    commit = memory.contribute(Contribution(
        problem=problem, episode=episode, worker="w01", kind="attempt", title="attempt",
        files={path: text}, parent=memory.main(), op=f"op-{episode}")).commit
    memory.compose()
    body = render({"problem": problem, "candidate": commit, "path": f"problems/{problem}/{path}",
                   "nominations": 1}, text)
    repo = memory.repo
    tip = repo[repo.references["refs/heads/main"].target]
    tree = trees.update(repo, tip.tree, trees.blobs(repo, {f"problems/{problem}/SOLUTION.md": body.encode()}))
    repo.create_commit("refs/heads/main", committer(), committer(), "solution\n", tree, [tip.id])
    return commit


def grade(*args: str):
    return runner.invoke(app, ["grade", *args], catch_exceptions=False)


def test_help_documents_every_option():
    result = grade("--help")
    assert result.exit_code == 0
    for option in ("--problem", "--all", "--referee-model", "--api-base", "--judgments", "--force", "--set"):
        assert option in result.output
    assert "GITSWARM_REFEREE_MODEL" in result.output


def test_bad_input_exits_2(setup, tmp_path: Path):
    memory, folder = setup
    assert grade(str(tmp_path / "nowhere")).exit_code == 2
    result = grade(str(memory.path), "--problem", "nope", "--set", str(folder))
    assert result.exit_code == 2 and "no problem 'nope'" in result.output
    assert grade(str(memory.path), "--problem", "sum").exit_code == 0  # the run knows its set's folder
    folder.rename(tmp_path / "moved")  # ...until it moves: "set" is no shipped set either
    result = grade(str(memory.path), "--problem", "sum")
    assert result.exit_code == 2 and "--set" in result.output


def test_no_selection_then_graded_then_stored(setup):
    memory, folder = setup
    base = [str(memory.path), "--set", str(folder), "--problem", "sum"]
    result = grade(*base)
    assert result.exit_code == 0 and "no selected solution for sum yet" in result.output
    commit = nominate(memory, "sum", "attempts/a.md", "Answer: HIDDEN-ANSWER-7431", "e1")
    result = grade(*base)
    assert result.exit_code == 0, result.output
    assert commit[:10] in result.output and "1/1" in result.output and "selected" in result.output
    again = grade(*base)
    assert again.exit_code == 0 and "stored earlier" in again.output


def test_proof_needs_a_model_and_is_judged_with_one(setup, monkeypatch: pytest.MonkeyPatch):
    memory, folder = setup
    monkeypatch.delenv("GITSWARM_REFEREE_MODEL", raising=False)
    nominate(memory, "odd", "attempts/p.md", "Let n = 2k+1; n^2 = 4k^2+4k+1 is odd.", "e1")
    base = [str(memory.path), "--set", str(folder), "--problem", "odd"]
    result = grade(*base)
    assert result.exit_code == 2 and "referee model" in result.output
    replies = [FakeReply(content=f"Reasoning.\n<points>{n}</points>") for n in (7, 7, 6, 7, 7)]
    with start_blocking_portal("asyncio") as portal, \
            portal.wrap_async_context_manager(serve(ScriptedResponder(replies))) as server:
        result = grade(*base, "--referee-model", "openai/fake-judge", "--api-base", server.url,
                       "--judgments", "5")
    assert result.exit_code == 0, result.output
    assert "7/7 (judges" in result.output and len(server.requests) == 5


def test_a_proof_left_ungraded_beside_a_graded_answer_exits_1(setup, monkeypatch: pytest.MonkeyPatch):
    """Exit 2 is for bad input that changed nothing; here the answer's grade is stored, so the
    proof left without a referee model is "something left ungraded": exit 1 (README, exit codes)."""
    memory, folder = setup
    monkeypatch.delenv("GITSWARM_REFEREE_MODEL", raising=False)
    nominate(memory, "sum", "attempts/a.md", "Answer: HIDDEN-ANSWER-7431", "e1")
    nominate(memory, "odd", "attempts/p.md", "Let n = 2k+1; n^2 = 4k^2+4k+1 is odd.", "e2")
    result = grade(str(memory.path), "--set", str(folder), "--problem", "sum", "--problem", "odd")
    assert result.exit_code == 1 and "referee model" in result.output
    assert "1/1" in result.output  # the answer was graded and stored
    again = grade(str(memory.path), "--set", str(folder), "--problem", "sum", "--problem", "odd")
    assert again.exit_code == 1 and "stored earlier" in again.output  # as `grade` of a graded demo run


def test_undecided_answer_exits_1(setup):
    memory, folder = setup
    nominate(memory, "sum", "attempts/a.md", "Answer: seven, more or less", "e1")
    result = grade(str(memory.path), "--set", str(folder), "--problem", "sum")
    assert result.exit_code == 1 and "undecided" in result.output


def test_referee_refusing_the_key_exits_1(setup):
    memory, folder = setup
    nominate(memory, "odd", "attempts/p.md", "A proof.", "e1")
    refused = FakeError(401, "invalid api key", kind="authentication_error", code="invalid_api_key")
    with start_blocking_portal("asyncio") as portal, \
            portal.wrap_async_context_manager(serve(ScriptedResponder([refused] * 3))) as server:
        result = grade(str(memory.path), "--set", str(folder), "--referee-model", "openai/fake-judge",
                       "--api-base", server.url)
    assert result.exit_code == 1 and "referee model failed on odd" in result.output
    assert "no selected solution for sum yet" in result.output
