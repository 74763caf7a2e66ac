"""The rules told to the workers and the user, and the scheduler that follows them: the real
engine, litellm and the fake server (the demo's scripted model, or scripted workers) on real
run repositories.

A run whose budget cannot select on every problem says so at the start and names the budget
that would; each kind family's system prompt carries its own standards and the run's
selection rule; `in_flight` lists every episode on the problem, announced or not, and an
announcement carries the problem id once; the item table keeps a `#!` first line; the
scheduler sends a worker to the review that verifies the best candidate before a new attempt
elsewhere, and never where its review would not count."""

from __future__ import annotations

import random
import re
from pathlib import Path

import anyio
import pytest
from demo_run import run_set
from test_live_memory import call, workers_on

from gitswarm.cli.progress import printer
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import tasks
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import overview, system_prompt
from gitswarm.engine.plan import EpisodePlan
from gitswarm.engine.runview import RunView
from gitswarm.engine.swarm import pick
from gitswarm.fakeserver import FakeReply
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

WORKER = re.compile(r"episode: (e\d+) · worker (w\d+) · step (\d+)")
PROBLEM = re.compile(r"problem: (\S+) \((\w+)\)")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def flat(text: str) -> str:
    """`text` with its line breaks and runs of spaces as single spaces (templates wrap lines)."""
    return " ".join(text.split())


def test_a_run_whose_budget_cannot_select_on_every_problem_says_so_and_names_the_budget_that_would(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    run = tmp_path / "run"
    result, _ = anyio.run(lambda: run_set(resolve_set("demo"), run, listeners=[printer()], workers=3, budget=10,
                                          max_episodes=1))
    said = capsys.readouterr().out
    assert ("note: 10 charged episodes left cannot select a verified solution of every one of the 5 open "
            "problems: each needs 3 (an attempt and 2 counted reviews); give --budget 15 or more") in said
    assert said.index("note: 10 charged") < said.index(" starts on ")  # before any episode is spent
    spent = result.charged
    assert spent == 1
    anyio.run(lambda: run_set(resolve_set("demo"), run, listeners=[printer()], workers=3, budget=10, max_episodes=2))
    assert f"note: {10 - spent} charged episodes left" in (again := capsys.readouterr().out)
    assert f"give --budget {15 + spent} or more" in again  # a resumed run counts what it spent
    anyio.run(lambda: run_set(resolve_set("demo"), tmp_path / "enough", listeners=[printer()], workers=3, budget=15,
                              max_episodes=1))
    assert "note:" not in capsys.readouterr().out


def test_each_kind_family_is_told_its_own_standards_and_the_runs_selection_rule(tmp_path: Path):
    problems = ("demo-odd-sum", "demo-reverse-words")
    _, server = anyio.run(lambda: run_set(resolve_set("demo"), tmp_path / "run", workers=4, budget=2,
                                          max_episodes=2, verify=3, problem_ids=problems))
    system: dict[str, set[str]] = {}
    for request in server.requests:
        said = {m["role"]: m["content"] for m in request["messages"][:2]}
        if "You are one worker" in said["system"]:  # not the merger's calls
            _, kind = PROBLEM.search(said["user"]).groups()
            system.setdefault(kind, set()).add(said["system"])
    assert set(system) == {"proof", "program"} and all(len(s) == 1 for s in system.values())  # one per family
    proof, program = flat(system["proof"].pop()), flat(system["program"].pop())
    assert "swarm of mathematicians" in proof and "Write mathematics in TeX" in proof
    assert "end an attempt with a line `Answer: <final answer>`" in proof and "Correctness above all" not in proof
    assert "swarm of programmers" in program and "Correctness above all" in program
    assert "code/<slug>/" in program and "compare both on the same inputs" in program
    assert "TeX" not in program and "Answer:" not in program
    for prompt in (proof, program):
        assert "*verified* once 3 pass review(s) from workers other than its author" in prompt
        assert "A verified candidate with no verified rival is the problem's solution" in prompt
        assert "3 nominations of it settle the problem" in prompt  # the default settle_nominations
    plurality = flat(system_prompt(SolveConfig(problems=tmp_path, run=tmp_path / "r", model="m", verify=0,
                                               settle_nominations=4),
                                   EpisodePlan("e1", "w01", "p", "proof", "P", "c" * 40)))
    assert "This run asks for no reviews" in plurality and "4 nominations of one settle the problem" in plurality
    assert "*verified* once" not in plurality


class Three:
    """Three scripted workers on one problem at once: w02 announces (with the problem id it need
    not repeat) and waits, w03 waits without announcing, w01 asks `in_flight` once both are in
    flight; then all abstain."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        self.seen: set[tuple[str, int]] = set()
        self.answer = ""
        self.done = anyio.Event()

    async def until(self, *steps: tuple[str, int]) -> None:
        with anyio.fail_after(30):
            while not set(steps) <= self.seen:
                await anyio.sleep(0.02)

    async def __call__(self, request: dict) -> FakeReply:
        prompt = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
        _, worker, step = WORKER.search(prompt).groups()
        self.seen.add((worker, int(step)))
        if worker == "w02" and step == "1":
            return call("announce", intent=f"{self.problem}: checking the base case")
        if worker == "w01" and step == "1":
            await self.until(("w02", 2), ("w03", 1))  # w02 announced; w03 is at its first call
            return call("in_flight")
        if worker == "w01":
            self.answer = [m["content"] for m in request["messages"] if m["role"] == "tool"][-1]
            self.done.set()
        else:
            with anyio.fail_after(30):
                await self.done.wait()
        return call("abstain", reason="done")


@pytest.mark.anyio
async def test_in_flight_lists_every_episode_on_the_problem_and_an_announcement_names_it_once(tmp_path: Path):
    run, problem = tmp_path / "run", "demo-odd-sum"
    responder = Three(problem)
    episodes = {r.worker: r.episode for r in (await workers_on(run, problem, responder, workers=3)).values()}
    answer = responder.answer
    assert f"on {problem}:\n" in answer, answer
    assert f"- w02 ({episodes['w02']}, step 2): checking the base case\n" in answer, answer
    assert f"- w03 ({episodes['w03']}, step 1): has not announced yet\n" in answer, answer
    assert answer.count(problem) == 1 and "w01" not in answer  # the id once; not its own episode


def add(memory: Memory, problem: str, episode: str, worker: str, kind: str, files: dict[str, str],
        **record: str) -> str:
    """One contribution by `worker`, composed into main; returns its commit."""
    written = memory.contribute(Contribution(problem, episode, worker, kind, f"{kind} {episode}", files,
                                             memory.main(), f"{episode}-final", **record))
    memory.compose([episode])
    return written.commit


def indexed(memory: Memory) -> MemoryIndex:
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    return index


def test_the_item_table_titles_a_codebase_by_its_contribution_and_drops_a_headings_marks(tmp_path: Path):
    problems, problem = resolve_set("demo"), "demo-reverse-words"
    memory = Memory.create(tmp_path / "run", load_set(problems), problem_ids=[problem])
    add(memory, problem, "x1", "w01", "code", {"code/cli/main.py": "#!/usr/bin/env python3\nprint('hi')\n"})
    add(memory, problem, "x2", "w02", "note", {"notes/idea.md": "## Split on whitespace\n\nthen join\n"})
    view = RunView(SolveConfig(problems=problems, run=tmp_path / "run", model="m"), problems=[problem])
    ep = EpisodePlan("e00009", "w03", problem, "program", "Reverse words", memory.main())
    rows = [line for line in overview(memory, view, indexed(memory), ep, "").splitlines() if line.startswith("| ")]
    assert any(r.startswith("| code/cli/ |") and r.endswith("| code x1 |") for r in rows), rows  # not its shebang
    assert any(r.startswith("| notes/idea.md |") and r.endswith("| Split on whitespace |") for r in rows), rows


def test_the_scheduler_sends_a_worker_to_the_review_that_verifies_the_best_candidate_first(tmp_path: Path):
    a, b = "demo-divisors-36", "demo-odd-sum"
    memory = Memory.create(tmp_path / "run", load_set(resolve_set("demo")), problem_ids=[a, b])
    best = add(memory, a, "x1", "w01", "attempt", {"attempts/best.md": "Answer: 9\n"})
    add(memory, a, "x2", "w02", "review", {"reviews/r1.md": "right"}, reviews=best, verdict="pass")
    index, rng = indexed(memory), random.Random(0)
    # On a, w01's review would not count (its own work) nor would w02's (counted already): b's
    # first attempt goes first, and with b gone neither is sent to a for a review.
    assert tasks.next_task(index, a, "w01", Rule(2)).value == 0
    assert tasks.next_task(index, a, "w02", Rule(2)).action == tasks.ATTEMPT
    assert pick(index, [a, b], [], ["w01", "w02"], {}, Rule(2), rng, waiting=True)[0] == b
    assert pick(index, [a], [], ["w01", "w02"], {}, Rule(2), rng, waiting=True) is None
    add(memory, a, "x3", "w04", "attempt", {"attempts/newer.md": "Answer: 9\n"})
    index = indexed(memory)
    # w03 could start b or review either candidate of a: the review one pass short of
    # verifying `best` comes first, though `newer` is newer and b untouched.
    task = tasks.next_task(index, a, "w03", Rule(2))
    assert (task.action, task.path, task.passes) == (tasks.VERIFY, "attempts/best.md", 1)
    assert task.value > tasks.next_task(index, b, "w03", Rule(2)).value
    assert pick(index, [a, b], [], ["w03"], {}, Rule(2), rng, waiting=True) == (a, "w03")
    # w02's review of `newer` would count: that is where it goes now, not to b.
    assert tasks.next_task(index, a, "w02", Rule(2)).path == "attempts/newer.md"
    assert pick(index, [a, b], [], ["w02"], {}, Rule(2), rng, waiting=True) == (a, "w02")
