"""The merger on a real repository, its model the scripted brain behind the fake server
through real litellm: conflicts resolved against main as it is when the model is asked."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from conftest import fsck_clean

from gitswarm.core.event_types import ConflictResolved
from gitswarm.demo.brain import respond
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.events import EventLog, read_events
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.merger import Merger
from gitswarm.engine.runview import RunView
from gitswarm.engine.shared import Shared
from gitswarm.fakeserver import serve
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig


@pytest.fixture
def anyio_backend():
    return "asyncio"


def summary_rewrite(memory: Memory, episode: str, start: str) -> Contribution:
    """A branch from `start` that rewrites the problem's SUMMARY.md (so every two conflict)."""
    return Contribution(problem="sum", episode=episode, worker=f"w{episode}", kind="note",
                        title=f"work of {episode}", parent=start, op=f"{episode}-final",
                        files={f"notes/{episode}.md": f"# {episode}\n", "SUMMARY.md": f"# Summary\n\n- {episode}\n"})


async def one_pass(memory: Memory, problem_dir: Path, start: str) -> tuple[Merger, object]:
    """One `compose_all` over every pending branch, from `start`, the merger's model the scripted
    brain behind the fake server; the merger, and the server (its requests)."""
    index = MemoryIndex()
    indexing.update(index, memory.repo, start)
    cfg = SolveConfig(problems=problem_dir, run=memory.path, model="openai/gitswarm-scripted",
                      summary_every=100)
    events = EventLog(memory.path)
    async with serve(respond) as server:
        model = LiteLLMModel(ModelConfig(model=cfg.model, api_base=server.url, api_key="k", reply_timeout_s=5))
        shared = Shared(Store(memory), index, RunView(["sum"]), cfg, model, events,
                        anyio.CapacityLimiter(1), lambda: None, Ledger())
        merger = Merger(shared, shared.ledger, model)
        with anyio.fail_after(60):
            await merger.compose_all()
    events.close()
    return merger, server


@pytest.mark.anyio
async def test_conflicts_on_one_file_are_each_resolved_once_against_the_current_main(
        tmp_path: Path, memory: Memory, problem_dir: Path):
    start = memory.main()
    episodes = ["e1", "e2", "e3", "e4"]
    for episode in episodes:
        memory.contribute(summary_rewrite(memory, episode, start))
    merger, server = await one_pass(memory, problem_dir, start)
    assert memory.pending() == {}
    summary = memory.read_file("problems/sum/SUMMARY.md").decode()
    assert all(f"- {e}" in summary for e in episodes)
    # e1 merged as it was; each other branch conflicted once and its one fix was taken:
    # no model call was made on a version of main that had moved on.
    resolved = [e.episode for e in read_events(memory.path) if isinstance(e, ConflictResolved)]
    assert sorted(resolved) == ["e2", "e3", "e4"]
    assert len(server.requests) == 3
    assert merger.ledger.episodes["merger"].calls == 3
    assert fsck_clean(memory.path)


@pytest.mark.anyio
async def test_a_branch_conflicting_on_two_files_merges_with_both_fixes(
        tmp_path: Path, memory: Memory, problem_dir: Path):
    """Each conflict of a branch is asked once, and the branch composes with all its fixes
    together: composed with one fix at a time, it conflicted on the other file every time and
    was asked again on every pass, never merging."""
    start = memory.main()
    for episode in ("e1", "e2"):
        memory.contribute(Contribution(
            problem="sum", episode=episode, worker=f"w{episode}", kind="note", title=f"work of {episode}",
            parent=start, op=f"{episode}-final",
            files={"SUMMARY.md": f"# Summary\n\n- {episode}\n", "notes/ideas.md": f"# Ideas\n\n- idea of {episode}\n"}))
    merger, server = await one_pass(memory, problem_dir, start)
    assert memory.pending() == {}
    for path, line in (("SUMMARY.md", "- e"), ("notes/ideas.md", "- idea of e")):
        text = memory.read_file(f"problems/sum/{path}").decode()
        assert f"{line}1" in text and f"{line}2" in text, text
    resolved = sorted(e.path for e in read_events(memory.path) if isinstance(e, ConflictResolved))
    assert resolved == ["problems/sum/SUMMARY.md", "problems/sum/notes/ideas.md"]
    assert len(server.requests) == 2 and merger.ledger.episodes["merger"].calls == 2
    assert fsck_clean(memory.path)
