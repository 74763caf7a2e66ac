"""The fast subset of scripts/chaos.py: hostile agents, concurrent git maintenance during a
run, hidden data after a run, and a provider failing 20% of calls with every fault kind."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from conftest import fsck_clean, git, write_set

from gitswarm.demo import audit
from gitswarm.demo.brain import respond
from gitswarm.demo.hostile import MARK, Hostile, attacks, prompt_violations
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FAULTS, FaultPlan, serve
from gitswarm.memory.trailers import parse
from gitswarm.models import LiteLLMModel, ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

DEMO = resolve_set("demo")


async def swarm(problems: Path, run: Path, responder=respond, faults: FaultPlan | None = None,
                limit_s: float = 60, **options):
    """The real engine against the fake server; returns (result, server)."""
    async with serve(responder, faults) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=2, backoff_base_s=0.01, backoff_cap_s=0.05)
        model = LiteLLMModel(config)
        problem_set = load_set(problems)
        cfg = SolveConfig.for_set(problem_set, run, model=config.model, **options)
        with anyio.fail_after(limit_s):
            return await solve(cfg, problem_set, model, model), server


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """Episode e00001 attacks and contributes injected text; e00002 floods; the rest are benign."""
    run = tmp_path_factory.mktemp("hostile") / "run"
    responder = Hostile(attacks(300 * 1024, 100, str(DEMO / "demo-divisors-36.md"), nul_content=False))
    result, server = anyio.run(lambda: swarm(DEMO, run, responder, workers=2, verify=0, budget=8, max_steps=20))
    return run, responder, server.requests, result


def answers(responder: Hostile) -> dict[str, str]:
    return {call: answer for _, call, answer in responder.results}


def test_hostile_writes_and_reads_are_refused_with_clear_tool_errors(hostile_run):
    run, responder, _, result = hostile_run
    got = answers(responder)
    refused = {"../x": "inside your problem folder", "/etc/x": "inside your problem folder",
               ".git/config": "paths into .git", "problems/other/notes/x.": "write only SUMMARY.md",
               "notes/a\\u0000b.md": "NUL byte", "notes/big.md": "larger than", "notes/bad.md": "not valid UTF-8",
               "../other/statement.md": "inside your problem folder", "/etc/passwd": "inside your problem folder"}
    for path, reason in refused.items():
        answer = next(a for c, a in got.items() if f'"{path}' in c)
        assert answer.startswith("error:") and reason in answer, (path, answer)
    floods = [a for c, a in got.items() if '"notes/f' in c]
    assert sum("at most 64 files" in a for a in floods) == 100 - 64
    attacker = audit.git(run, "log", "--all", "--format=%H", "--grep", "Gitswarm-Episode: e00001").split()
    assert len(attacker) == 1 and result.reason.detail == "budget of 8 episodes spent"
    transcript = git(run, "notes", "--ref=transcripts", "show", attacker[0])
    assert "paths into .git" in transcript and "the path contains a NUL byte" in transcript
    files = git(run, "ls-tree", "-r", "--name-only", "main").split()
    assert not [f for f in files if f.startswith((".git", "/")) or ".." in f or f == "x"]
    assert fsck_clean(run)


def test_run_python_cannot_read_the_hidden_parts_of_the_problem_set(hostile_run):
    """BUG (reported): the sandbox hides only the run repository, not the problem-set folder,
    so `open('<set>/<problem>.md')` in run_python prints the answer key and solution."""
    _, responder, _, _ = hostile_run
    answer = next(a for c, a in answers(responder).items() if c.startswith("run_python"))
    assert "36 = 2^2 * 3^2" not in answer and "answer: '9'" not in answer


def test_injected_text_reaches_other_agents_only_inside_the_memory_fence(hostile_run):
    """BUG (reported): the overview's "first line" column, the in-flight announcements and a
    `</memory-data>` inside a file put agent-written text outside the fence."""
    _, responder, requests, _ = hostile_run
    seen = [r for r in requests if MARK in str(r.get("messages"))]
    assert len(seen) > 2  # the injection did reach other agents' prompts
    assert prompt_violations(requests, lambda e: e in responder.plans) == []


def test_a_nul_byte_in_a_file_does_not_kill_the_run(tmp_path: Path):
    """BUG (reported): a file with a NUL byte is accepted; the next episode that shows it
    puts the NUL into its transcript and create_note raises ValueError, ending the run."""
    plans = {"e00001": [[{"name": "write_file", "arguments": {"path": "notes/nul.md", "content": "a\x00b"}}],
                        [{"name": "contribute", "arguments": {"kind": "note", "title": "t", "summary": "s"}}]]}
    result, _ = anyio.run(lambda: swarm(DEMO, tmp_path / "run", Hostile(plans), workers=1, verify=0, budget=4,
                                        problem_ids=("demo-odd-sum",)))
    assert result.charged == 4 and fsck_clean(tmp_path / "run")


def test_git_gc_pack_refs_and_readers_during_a_run_lose_nothing(tmp_path: Path):
    run, problems = tmp_path / "run", write_set(tmp_path / "set")
    g = ["git", "-C", str(run)]
    loops = [[*g, "-c", "gc.auto=10", "-c", "gc.autoPackLimit=2", "-c", "gc.autoDetach=false", "gc", "--auto",
              "--quiet"], [*g, "pack-refs", "--all"], [*g, "log", "--all", "--oneline"]]
    stop = anyio.Event()

    async def hammer(argv: list[str]) -> None:
        while not stop.is_set():
            await anyio.run_process(argv, check=False)
            await anyio.sleep(0.02)

    async def go():
        async with anyio.create_task_group() as tg:
            async def run_it():
                try:
                    return await swarm(problems, run, faults=FaultPlan(latency_s=0.02), workers=16, budget=40,
                                       settle_nominations=10**6)
                finally:
                    stop.set()
            tg.start_soon(run_it)
            while not (run / "HEAD").exists():
                await anyio.sleep(0.05)
            for argv in loops:
                tg.start_soon(hammer, argv)
    anyio.run(go)
    assert audit.charged(run) == 40 and audit.duplicated(run) == 0 and fsck_clean(run)
    ledger = git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/ledger").split()
    commits = {re.search(r'"commit": "(\w+)"', git(run, "show", f"refs/gitswarm/ledger:{p}")) for p in ledger
               if p.startswith("episodes/")}
    assert {m.group(1) for m in commits if m} <= audit.reachable(run)


def test_no_hidden_text_in_any_object_after_a_run(tmp_path: Path):
    problems = write_set(tmp_path / "set")  # hidden parts are marked HIDDEN-
    anyio.run(lambda: swarm(problems, tmp_path / "a", workers=3, budget=12))
    assert b"HIDDEN-" not in audit.all_objects(tmp_path / "a")
    anyio.run(lambda: swarm(DEMO, tmp_path / "demo", workers=4, budget=60))
    demo = load_set(DEMO)
    secrets = {p.id: p.hidden_texts() for p in demo.problems}
    assert audit.hidden_leaks(tmp_path / "demo", secrets, audit.public_text(demo)) == []


def test_a_provider_failing_a_fifth_of_calls_with_every_fault_kind(tmp_path: Path):
    plan = FaultPlan(rate=0.2, kinds=tuple(FAULTS), seed=3, retry_after_s=0)
    # no_progress 10: the faults, not the scheduling, are what is tested; under a loaded machine
    # the scripted workers' abstentions while others' work waits to be merged reached 4 in a
    # row on one problem once, and the no-progress rule (tested in test_bounds) set it aside.
    result, server = anyio.run(lambda: swarm(DEMO, tmp_path / "run", faults=plan, workers=4, budget=30,
                                             no_progress=10, limit_s=80))
    assert len(server.injected) >= 6
    assert result.charged <= 30 and str(result.reason) in ("every problem is settled", "budget of 30 episodes spent")
    assert audit.duplicated(tmp_path / "run") == 0 and fsck_clean(tmp_path / "run")


def test_commit_trailers_carry_the_episode_tokens(tmp_path: Path):
    """BUG (reported): contributions are committed with `Gitswarm-Tokens: in=0 out=0` and no
    Gitswarm-Model, though the ledger has the episode's tokens."""
    run = tmp_path / "run"
    anyio.run(lambda: swarm(write_set(tmp_path / "set"), run, workers=2, verify=0, budget=3))
    messages = git(run, "log", "--all", "--no-merges", "--format=%B%x00").split("\x00")
    rows = [(t["Episode"], t.get("Tokens", "")) for t in map(parse, messages) if "Episode" in t]
    assert rows and all(t not in ("", "in=0 out=0") for _, t in rows), rows
