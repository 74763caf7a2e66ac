"""A model call cut off mid-reply (the time limit's grace ran out while the server was still
answering) is a call the server received: the ledger counts it (its tokens unknown), the cut
episode's note says so, and the export's steps are the ledger's calls. The fake provider on
127.0.0.1 answers each episode's first call at once and holds its second past every bound;
the real engine, ledger and `export`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import anyio
from typer.testing import CliRunner

from gitswarm.cli.common import Exit
from gitswarm.cli.main import app
from gitswarm.cli.running import run_swarm
from gitswarm.cli.solve import _config
from gitswarm.engine.ledger import Ledger
from gitswarm.fakeserver import FakeReply
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set

received: Counter[int] = Counter()  # requests by how many assistant turns they carried


async def second_call_hangs(request: dict) -> FakeReply:
    """A quick first reply (list the items), then a reply that never comes in time."""
    turns = sum(m.get("role") == "assistant" for m in request["messages"])
    received[turns] += 1
    if turns:
        await anyio.sleep(60)
    return FakeReply(tool_calls=[{"name": "list_items", "arguments": {}}])


def test_a_call_cut_mid_reply_is_counted_and_exported_as_a_step(problem_dir: Path, tmp_path: Path) -> None:
    received.clear()
    problem_set, run = load_set(problem_dir), tmp_path / "run"
    cfg = _config(problem_set, "openai/gitswarm-fake", run, workers=2, verify=0, api_key="k", budget=4,
                  time_limit_s=1.5)
    cfg = cfg.model_copy(update={"stop_grace_s": 0.5})
    assert run_swarm(cfg, problem_set, as_json=False, responder=second_call_hangs) == Exit.OK
    cut = list(Ledger.load(Memory(run)).episodes.values())
    assert len(cut) == 2 and {r.status for r in cut} == {"stopped"}, cut
    assert received == {0: 2, 1: 2}, received  # each episode's second call reached the server
    assert all(r.calls == 2 and r.failed_calls == 1 for r in cut), cut
    assert all(r.note.endswith("after 2 model calls") for r in cut), [r.note for r in cut]
    out = tmp_path / "steps.jsonl"
    done = CliRunner().invoke(app, ["export", str(run), "--format", "steps", "--out", str(out)])
    assert done.exit_code == 0, done.output
    steps = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert Counter(s["episode"] for s in steps) == {r.episode: r.calls for r in cut}
    assert sum(s["reply"] is None and s["error"] is not None for s in steps) == 2  # the cut ones
