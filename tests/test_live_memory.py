"""One view of the memory per step, and a budget that ends in a result: the real engine, litellm
and the fake server on real run repositories, with scripted workers that act on what the state
tells them.

An episode that starts before a teammate's work lands sees it at its next step (the state, the
item list, `read_file` and the shell's code tree alike) and builds on it; a verified candidate
with no verified rival is selected without a nomination; a run whose budget ends before anything
is verified still selects its best-reviewed candidate, marked unverified; every problem with
merged work has a summary; and the scheduler sends no worker where its only task would be
reviewing its own work."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import anyio
import pytest
from conftest import git
from demo_run import run_set
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine import digest
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.run import solve
from gitswarm.engine.swarm import pick
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory import indexing
from gitswarm.memory.repo import INITIAL_SUMMARY, Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

WORKER = re.compile(r"episode: (e\d+) · worker (w\d+) · step (\d+)")
CODE = 'def reverse_words(s: str) -> str:\n    return " ".join(reversed(s.split()))\n'


@pytest.fixture
def anyio_backend():
    return "asyncio"


def call(name: str, **arguments: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "arguments": arguments}])


def last_prompt(request: dict) -> str:
    """The newest user turn: the state block of the step being answered."""
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


class Two:
    """Two scripted workers at once: w01 writes its work and contributes; w02 starts beside it,
    waits (one step) until w01's work is on main, then follows its `later` script."""

    def __init__(self, run: Path, first: list[FakeReply], landed: str, later: list[FakeReply]) -> None:
        self.run, self.first, self.landed, self.later = run, first, landed, later
        self.prompts: dict[int, str] = {}
        """w02's prompt at each step."""
        self.results: dict[int, list[str]] = {}
        """The tool results w02's request at each step carries."""

    async def __call__(self, request: dict) -> FakeReply:
        _, worker, step = WORKER.search(last_prompt(request)).groups()
        step = int(step)
        if worker == "w01":
            return self.first[min(step, len(self.first)) - 1]
        self.prompts[step] = last_prompt(request)
        self.results[step] = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        if step == 1:
            return call("announce", intent="reviewing what lands")
        if step == 2:  # this step's view was taken before w01's work landed: wait for it
            with anyio.fail_after(30):
                while Memory(self.run).read_file(self.landed) is None:
                    await anyio.sleep(0.05)
            return call("in_flight")
        return self.later[min(step - 3, len(self.later) - 1)]


async def workers_on(run: Path, problem: str, responder, workers: int = 2) -> dict:
    """`problem` of the demo set solved into `run` by `workers` workers, one episode each, with
    `responder` as their model; returns the ledger's episodes."""
    problems = resolve_set("demo")
    Memory.create(run, load_set(problems), problem_ids=[problem])
    async with serve(responder) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=60, backoff_base_s=0.01)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=run, model=config.model, workers=workers, budget=6,
                          max_episodes=workers, problem_ids=(problem,), verify=1)
        with anyio.fail_after(90):
            await solve(cfg, load_set(problems), model, model)
    return Ledger.load(Memory(run)).episodes


@pytest.mark.anyio
async def test_an_episode_started_before_a_codebase_landed_builds_and_reviews_it_from_its_shell(tmp_path: Path):
    run = tmp_path / "run"
    responder = Two(run, [call("write_file", path="code/rev/solution.py", content=CODE),
                          call("contribute", kind="code", title="reverse the words", summary="split and join",
                               self_assessment="complete")],
                    "problems/demo-reverse-words/code/rev/solution.py",
                    [call("shell", command="cd rev && python3 -c 'from solution import reverse_words as r; "
                                           "print(repr(r(\"  the sky  is blue \")))'"),
                     call("write_file", path="reviews/rev.md", content="# Review\n\nRan it: right.\n"),
                     call("contribute", kind="review", title="review of code/rev", summary="ran it",
                          reviews="code/rev", verdict="pass")])
    episodes = await workers_on(run, "demo-reverse-words", responder)
    author, reviewer = episodes["e00001"], episodes["e00002"]
    assert author.worker == "w01" and reviewer.worker == "w02" and reviewer.status == "contribute"
    started = responder.prompts[1]
    assert "code/rev" not in started  # its start commit held no codebase
    seen = responder.prompts[3]
    assert "1 item(s) landed since, marked new" in seen and "most useful next: review code/rev" in seen
    assert "'blue is sky the'" in responder.results[4][-1]  # the shell ran w01's codebase
    message = git(run, "log", "-1", "--format=%B", reviewer.commit)
    assert f"Gitswarm-Reviews: {author.commit}" in message and "Gitswarm-Verdict: pass" in message
    parent = git(run, "rev-parse", f"{reviewer.commit}^").strip()
    assert git(run, "merge-base", "--is-ancestor", author.commit, parent) == ""  # made on main as it saw it
    summary = git(run, "show", "main:problems/demo-reverse-words/SUMMARY.md")
    assert digest.MARK in summary and "`code/rev`" in summary  # no "No work on this problem yet"
    solution = git(run, "show", "main:problems/demo-reverse-words/SOLUTION.md")
    assert f"candidate: {author.commit}" in solution and "verification: verified" in solution


@pytest.mark.anyio
async def test_an_episode_started_before_an_attempt_landed_reads_it(tmp_path: Path):
    run = tmp_path / "run"
    responder = Two(run, [call("write_file", path="attempts/a.md", content="# Sketch\n\nAnswer: 9\n"),
                          call("contribute", kind="attempt", title="nine divisors", summary="by counting",
                               self_assessment="complete")],
                    "problems/demo-divisors-36/attempts/a.md",
                    [call("read_file", path="attempts/a.md"), call("list_items"),
                     call("abstain", reason="read it")])
    episodes = await workers_on(run, "demo-divisors-36", responder)
    assert episodes["e00002"].status == "abstain"
    said = responder.results[5]
    assert "Answer: 9" in said[-2]  # read_file reads main as the step's view shows it
    assert "attempts/a.md  commit" in said[-1] and "new since your episode started" in said[-1], said[-1]


class Settling:
    """Three scripted workers on one problem: w01 attempts, w03 reviews the attempt once it is on
    main (a pass that settles the problem), and w02, started beside them, waits for the review
    to land, then abstains once it is told the problem settled."""

    def __init__(self, run: Path, problem: str) -> None:
        self.run, self.base = run, f"problems/{problem}"
        self.told: dict[int, str] = {}

    async def landed(self, path: str) -> None:
        with anyio.fail_after(30):
            while Memory(self.run).read_file(f"{self.base}/{path}") is None:
                await anyio.sleep(0.05)

    async def __call__(self, request: dict) -> FakeReply:
        _, worker, step = WORKER.search(last_prompt(request)).groups()
        if worker == "w01":
            return (call("write_file", path="attempts/a.md", content="# Nine\n\nAnswer: 9\n") if step == "1" else
                    call("contribute", kind="attempt", title="nine", summary="counted", self_assessment="complete"))
        if worker == "w03":
            if step == "1":
                await self.landed("attempts/a.md")
                await anyio.sleep(0.5)  # merged and indexed: the next step's view holds it
                return call("in_flight")
            return (call("write_file", path="reviews/r.md", content="Checked: right.\n") if step == "2" else
                    call("contribute", kind="review", title="a pass", summary="checked", reviews="attempts/a.md",
                         verdict="pass"))
        self.told[int(step)] = last_prompt(request)
        if step == "1":
            await self.landed("reviews/r.md")
            await anyio.sleep(0.5)  # the merger settles the problem as it takes the review in
            return call("in_flight")
        return call("abstain", reason="settled meanwhile")


@pytest.mark.anyio
async def test_an_episode_whose_problem_settles_meanwhile_is_told_at_its_next_step_and_ends_uncharged(
        tmp_path: Path):
    run, problem = tmp_path / "run", "demo-divisors-36"
    responder = Settling(run, problem)
    episodes = {r.worker: r for r in (await workers_on(run, problem, responder, workers=3)).values()}
    assert episodes["w03"].status == "contribute" and episodes["w02"].status == "abstain"
    assert "settled while you worked" not in responder.told[1]
    assert "Your problem was settled while you worked" in responder.told[2], responder.told[2]


def test_a_verified_candidate_with_no_rival_is_selected_without_a_nomination(tmp_path: Path):
    problems = ("demo-divisors-36", "demo-odd-sum", "demo-shout")
    result, _ = anyio.run(lambda: run_set(resolve_set("demo"), tmp_path / "run", workers=3, problem_ids=problems))
    assert result.reason.reason == "settled"
    assert all(s is not None and s.verified and s.nominations == 0 for s in result.selected.values())
    kinds = git(tmp_path / "run", "log", "--all", "--format=%(trailers:key=Gitswarm-Kind,valueonly)").split()
    assert "nomination" not in kinds and result.charged <= 3 * 10
    for problem in problems:  # every problem with merged work has a current summary
        assert git(tmp_path / "run", "show", f"main:problems/{problem}/SUMMARY.md") != INITIAL_SUMMARY


def contribute(memory: Memory, episode: str, worker: str, kind: str, files: dict[str, str], **record) -> str:
    written = memory.contribute(Contribution("demo-divisors-36", episode, worker, kind, f"{kind} {episode}", files,
                                             memory.main(), f"{episode}-final", **record))
    memory.compose([episode])
    return written.commit


def test_a_run_that_verifies_nothing_selects_its_best_reviewed_candidate_unverified(tmp_path: Path):
    run = tmp_path / "run"
    memory = Memory.create(run, load_set(resolve_set("demo")), problem_ids=["demo-divisors-36"])
    flawed = contribute(memory, "x1", "w01", "attempt", {"attempts/flawed.md": "Answer: 8\n"})
    good = contribute(memory, "x2", "w02", "attempt", {"attempts/good.md": "Answer: 9\n"})
    contribute(memory, "x3", "w03", "attempt", {"attempts/unread.md": "Answer: 10\n"})
    contribute(memory, "x4", "w03", "review", {"reviews/r1.md": "wrong"}, reviews=flawed, verdict="critical")
    contribute(memory, "x5", "w01", "review", {"reviews/r2.md": "right"}, reviews=good, verdict="pass")
    result, _ = anyio.run(lambda: run_set(resolve_set("demo"), run, workers=3, budget=1, max_episodes=1,
                                          problem_ids=("demo-divisors-36",)))
    chosen = result.selected["demo-divisors-36"]
    assert result.reason.reason in ("budget", "episode_cap")
    assert (chosen.candidate, chosen.verified) == (good, False)  # 1 pass of 2, no critical: the best reviewed
    solution = git(run, "show", "main:problems/demo-divisors-36/SOLUTION.md")
    assert f"candidate: {good}" in solution and "verification: unverified" in solution
    status = json.loads(CliRunner().invoke(app, ["status", str(run), "--json"]).output)["problems"][0]
    assert (status["state"], status["verification"]) == ("selected", "unverified")
    shown = CliRunner().invoke(app, ["show", str(run), "demo-divisors-36"]).output
    assert "verification: unverified" in shown


def test_no_worker_is_sent_where_its_only_task_is_reviewing_its_own_work(tmp_path: Path):
    memory = Memory.create(tmp_path / "run", load_set(resolve_set("demo")),
                           problem_ids=["demo-divisors-36", "demo-odd-sum"])
    contribute(memory, "x1", "w01", "attempt", {"attempts/mine.md": "Answer: 9\n"})
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    rng = random.Random(0)
    only = ["demo-divisors-36"]
    assert pick(index, only, ["demo-divisors-36"], ["w01"], {}, Rule(2), rng, waiting=True) is None  # w01 waits
    both = ["demo-divisors-36", "demo-odd-sum"]
    assert pick(index, both, ["demo-divisors-36"], ["w01"], {}, Rule(2), rng, waiting=True) == ("demo-odd-sum", "w01")
    assert pick(index, both, [], ["w01", "w02"], {}, Rule(2), rng, waiting=False) == ("demo-divisors-36", "w02")


def test_a_code_tree_brought_forward_keeps_the_episodes_own_changes():
    """`Workspace.advance`: what landed on main comes in, what the episode changed stays its own
    and is staged against the new baseline; a file main removed goes unless the episode edited it."""
    from gitswarm.engine.workspace import Workspace
    from gitswarm.memory.paths import WriteLimits

    tree = Workspace({"code/a/x.py": b"one\n", "code/a/gone.py": b"old\n", "code/a/kept.py": b"k\n"})
    try:
        (tree.root / "a" / "x.py").write_text("mine\n")
        (tree.root / "a" / "kept.py").write_text("edited\n")
        tree.advance({"code/a/x.py": b"two\n", "code/b/new.py": b"theirs\n"})
        assert (tree.root / "a" / "x.py").read_text() == "mine\n"
        assert (tree.root / "b" / "new.py").read_text() == "theirs\n"
        assert not (tree.root / "a" / "gone.py").exists() and (tree.root / "a" / "kept.py").exists()
        scan = tree.scan(WriteLimits(), 100)
        assert scan.staged == {"code/a/x.py": "mine\n", "code/a/kept.py": "edited\n"} and scan.deleted == set()
    finally:
        tree.close()
