"""Selection needs verification, through the real engine, litellm and the fake server: three
workers nominate a flawed attempt and two others find its critical error; the revision that
two of them then pass is selected. With `--verify 0`, plain plurality picks the flawed one."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from conftest import git
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory.repo import Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.readmodel.read import read_run
from gitswarm.resources import resolve_set

PROBLEM = "demo-odd-sum"
FLAWED, REVISED = "attempts/flawed.md", "attempts/revised.md"
WORKER = re.compile(r"· worker (w\d+) ·")
ROW = re.compile(r"^\| ((?:attempts|reviews)/\S+) \| ([0-9a-f]{7,40}) \|", re.MULTILINE)
runner = CliRunner()


@pytest.fixture
def anyio_backend():
    return "asyncio"


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


class Roles:
    """A scripted swarm by roles: w01 writes the flawed attempt, then its revision once a
    critical review is on main; w02-w04 nominate the flawed attempt; w05 and w06 review it as
    critical, then the revision as pass. Everyone else, and anyone with nothing left to do,
    abstains."""

    def __init__(self) -> None:
        self.nominated: set[str] = set()

    def __call__(self, request: dict) -> FakeReply:
        messages = request["messages"]
        if not request.get("tools"):
            return FakeReply(content="# Summary\n\nAn induction, reviewed.\n")  # the merger's summary
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        worker = WORKER.search(prompt).group(1)
        items = dict(ROW.findall(prompt))
        plan = self.plan(worker, items)
        step = sum(m["role"] == "assistant" for m in messages)
        return FakeReply(tool_calls=[plan[min(step, len(plan) - 1)]])

    def plan(self, worker: str, items: dict[str, str]) -> list[dict]:
        critical = [c for p, c in items.items() if p.startswith("reviews/critical-")]
        if worker == "w01" and FLAWED not in items:
            return attempt(FLAWED, "The next odd number is 2n - 1, so the sum is n^2 + 2n - 1 = (n+1)^2.", [])
        if worker == "w01" and critical and REVISED not in items:
            return attempt(REVISED, "The next odd number is 2n + 1, and n^2 + 2n + 1 = (n+1)^2.",
                           [critical[0], items[FLAWED]])
        if worker in ("w02", "w03", "w04") and FLAWED in items and worker not in self.nominated:
            self.nominated.add(worker)
            return [call("nominate", candidate=FLAWED, rationale="looks right to me")]
        if worker in ("w05", "w06") and FLAWED in items and f"reviews/critical-{worker}.md" not in items:
            return review(worker, FLAWED, "critical", 'Critical: "the next odd number is 2n - 1" is false.')
        if worker in ("w05", "w06") and REVISED in items and f"reviews/pass-{worker}.md" not in items:
            return review(worker, REVISED, "pass", "Every step checked: correct.")
        return [call("abstain", reason="nothing for this role now")]


def attempt(path: str, text: str, cites: list[str]) -> list[dict]:
    return [call("write_file", path=path, content=f"# Induction\n\n{text}\n"),
            call("contribute", kind="attempt", title=path, summary="an induction", informed_by=cites)]


def review(worker: str, target: str, verdict: str, text: str) -> list[dict]:
    return [call("write_file", path=f"reviews/{verdict}-{worker}.md", content=f"# Review\n\n{text}\n"),
            call("contribute", kind="review", title=f"review of {target}", summary=verdict, reviews=target,
                 verdict=verdict)]


async def run_roles(run: Path, verify: int):
    problems = resolve_set("demo")
    async with serve(Roles()) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=5, backoff_base_s=0.01)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=run, model=config.model, workers=6, budget=9, max_episodes=300,
                          no_progress=300, verify=verify, problem_ids=(PROBLEM,))
        with anyio.fail_after(120):
            return await solve(cfg, load_set(problems), model, model)


@pytest.mark.anyio
async def test_nominations_do_not_select_a_flawed_attempt_and_the_verified_revision_wins(tmp_path: Path):
    result = await run_roles(tmp_path / "run", verify=2)
    chosen = result.selected[PROBLEM]
    assert chosen.path == f"problems/{PROBLEM}/{REVISED}" and chosen.verified and chosen.nominations == 0
    assert result.reason.reason == "budget"  # three nominations of an unverified attempt never settle it
    state = read_run(Memory(tmp_path / "run")).problem(PROBLEM)
    flawed = next(c for c in state.candidates if c.path.endswith(FLAWED))
    assert (flawed.nominations, flawed.reviews.critical, flawed.verified) == (3, 2, False)
    assert state.verification == "verified" and state.standing.reviews.passed == 2
    solution = git(tmp_path / "run", "show", f"main:problems/{PROBLEM}/SOLUTION.md")
    assert "verification: verified" in solution and "passes: 2" in solution
    shown = runner.invoke(app, ["status", str(tmp_path / "run")])
    assert f"{PROBLEM} " in shown.output and " verified " in shown.output
    report = runner.invoke(app, ["report", str(tmp_path / "run")]).output
    assert "| verification |" in report and "| verified |" in report
    assert f"## {PROBLEM}: review trail of the selected candidate problems/{PROBLEM}/{REVISED} (verified)" in report
    assert "| pass | yes | problems/demo-odd-sum/reviews/pass-w05.md |" in report
    assert "| pass | yes | problems/demo-odd-sum/reviews/pass-w06.md |" in report
    trails = git(tmp_path / "run", "log", "main", "--format=%(trailers:key=Gitswarm-Verdict,valueonly)",
                 f"--grep=Gitswarm-Reviews: {chosen.candidate}")
    assert trails.split() == ["pass", "pass"]  # plain git answers who checked what
    critical = git(tmp_path / "run", "log", "main", "--format=%H", "--grep=Gitswarm-Verdict: critical").split()
    subject = git(tmp_path / "run", "log", "-1", "--format=%s", chosen.candidate).strip()
    assert subject.startswith(f"attempt({PROBLEM}): revises {FLAWED} (critical review ")  # the revision says so
    assert subject.split("critical review ")[1][:7] in {c[:7] for c in critical}


@pytest.mark.anyio
async def test_with_verify_0_plain_plurality_picks_the_flawed_attempt(tmp_path: Path):
    result = await run_roles(tmp_path / "run", verify=0)
    chosen = result.selected[PROBLEM]
    assert chosen.path == f"problems/{PROBLEM}/{FLAWED}" and chosen.nominations == 3
    assert result.reason.reason == "settled"
    assert read_run(Memory(tmp_path / "run")).problem(PROBLEM).verification == "not required"


def test_too_few_workers_to_verify_are_refused_with_what_to_do(tmp_path: Path):
    done = runner.invoke(app, ["solve", "demo", "--model", "openai/x", "--api-base", "http://127.0.0.1:9", "--run",
                               str(tmp_path / "run"), "--workers", "2"])
    assert done.exit_code == 2, done.output
    assert "verify=2 needs at least 3 workers" in done.output and "--workers 3" in done.output
    assert not (tmp_path / "run").exists()
