"""Review verdicts as data, through the real engine, litellm and the fake server on real run
repositories: the `contribute` tool's `reviews` and `verdict`, the trailers plain git reads,
the index that counts only other workers' reviews, the header and overview that show them,
and the read model's per-candidate counts."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from conftest import git
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, ScriptedResponder, serve
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.readmodel.read import read_run
from gitswarm.resources import resolve_set

PROBLEM = "demo-odd-sum"
ATTEMPT = "attempts/induction.md"
REVIEW_TEXT = "# Review\n\nStep 2, \"adding $2n+1$\": correct. The base case is not checked: a gap.\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def call(name: str, **arguments) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "arguments": arguments}])


def prebuilt(run: Path) -> Memory:
    """A demo run holding only PROBLEM."""
    return Memory.create(run, load_set(resolve_set("demo")), problem_ids=[PROBLEM])


def add(memory: Memory, episode: str, worker: str, kind: str, files: dict[str, str], cites: tuple[str, ...] = (),
        **record: str) -> str:
    """One contribution to PROBLEM by `worker`, composed into main; returns its commit."""
    written = memory.contribute(Contribution(
        problem=PROBLEM, episode=episode, worker=worker, kind=kind, title=f"{kind} by {worker}", files=files,
        parent=memory.main(), op=f"{episode}-final", informed_by=cites, **record))
    memory.compose()
    return written.commit


async def episode(run: Path, replies: list[FakeReply], worker_count: int = 3, verify: int = 2):
    """One scripted episode on PROBLEM, of worker w01 unless the scheduler prefers another for
    reviewing w01's attempt; returns (ledger record, fake server)."""
    problems = resolve_set("demo")
    async with serve(ScriptedResponder(replies)) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=5, backoff_base_s=0.01)
        model = LiteLLMModel(config)
        cfg = SolveConfig(problems=problems, run=run, model=config.model, workers=worker_count, budget=1,
                          max_episodes=1, problem_ids=(PROBLEM,), verify=verify)
        with anyio.fail_after(60):
            await solve(cfg, load_set(problems), model, model)
    return Ledger.load(Memory(run)).episodes["e00001"], server


def tool_results(server) -> str:
    """Every tool result of the episode (the last request holds the whole conversation)."""
    return json.dumps([m for m in server.requests[-1]["messages"] if m["role"] == "tool"])


def first_prompt(server) -> str:
    return next(m["content"] for m in server.requests[0]["messages"] if m["role"] == "user")


WRITE_REVIEW = call("write_file", path="reviews/induction-check.md", content=REVIEW_TEXT)


@pytest.mark.anyio
async def test_a_review_without_a_verdict_is_refused_and_with_one_carries_both_trailers(tmp_path: Path):
    run = tmp_path / "run"
    memory = prebuilt(run)
    attempt = add(memory, "x0001", "w02", "attempt", {ATTEMPT: "# Induction\n\nBase case, then step.\n"})
    record, server = await episode(run, [
        WRITE_REVIEW,
        call("contribute", kind="review", title="check of the induction", summary="Step by step.",
             reviews=ATTEMPT),
        call("contribute", kind="review", title="check of the induction", summary="Step by step.",
             reviews=ATTEMPT, verdict="correct"),
        call("contribute", kind="review", title="check", summary="x", reviews="attempts/none.md", verdict="gaps"),
        call("contribute", kind="review", title="check of the induction", summary="Step by step.",
             reviews=ATTEMPT, verdict="gaps", informed_by=[attempt])])
    assert record.status == "contribute"
    said = tool_results(server)
    assert "error: a review ends with a verdict: give verdict as one of pass, gaps, critical" in said
    assert "error: `verdict` must be one of pass, gaps, critical; you sent 'correct'" in said
    assert "reviews: no attempt or program 'attempts/none.md' of this problem in the memory" in said
    assert said.count("error:") == 3  # and the episode went on to its valid call

    log = git(run, "log", "--all", "--format=%(trailers:key=Gitswarm-Verdict,valueonly)")
    assert [line for line in log.splitlines() if line] == ["gaps"]
    message = git(run, "log", "-1", "--format=%B", record.commit)
    assert f"Gitswarm-Reviews: {attempt}\n" in message and "Gitswarm-Verdict: gaps\n" in message
    assert f"Gitswarm-Informed-By: {attempt}\n" in message  # cited once, though named twice
    grep = git(run, "log", "--all", f"--grep=Gitswarm-Reviews: {attempt}", "--format=%H")
    assert grep.split() == [record.commit]
    stored = git(run, "show", f"{record.commit}:problems/{PROBLEM}/reviews/induction-check.md")
    assert stored.startswith(f"---\nreviews: {attempt}\npath: {ATTEMPT}\nverdict: gaps\nepisode: e00001\n---\n")
    assert stored.endswith(REVIEW_TEXT)

    index = MemoryIndex()
    indexing.update(index, Memory(run).repo, Memory(run).main())
    assert [(r.worker, r.verdict) for r in index.reviews_of(PROBLEM, attempt)] == [("w01", "gaps")]
    candidate = read_run(Memory(run)).problem(PROBLEM).candidates
    assert [(c.path, c.commit, c.reviews.as_dict()) for c in candidate] == [
        (f"problems/{PROBLEM}/{ATTEMPT}", attempt, {"pass": 0, "gaps": 1, "critical": 0})]
    shown = json.loads(CliRunner().invoke(app, ["status", str(run), "--json"]).output)
    assert shown["problems"][0]["candidates"][0]["reviews"] == {"pass": 0, "gaps": 1, "critical": 0}


@pytest.mark.anyio
async def test_a_review_of_ones_own_attempt_is_committed_but_does_not_count(tmp_path: Path):
    run = tmp_path / "run"
    memory = prebuilt(run)
    attempt = add(memory, "x0001", "w01", "attempt", {ATTEMPT: "# Induction\n"})  # w01 runs the episode
    record, _ = await episode(run, worker_count=1, verify=0, replies=[WRITE_REVIEW, call(
        "contribute", kind="review", title="self-check", summary="Mine.", reviews=ATTEMPT, verdict="pass")])
    assert record.status == "contribute"
    assert "Gitswarm-Verdict: pass" in git(run, "log", "-1", "--format=%B", record.commit)
    index = MemoryIndex()
    indexing.update(index, Memory(run).repo, Memory(run).main())
    assert index.problems[PROBLEM].reviews[attempt]["w01"].verdict == "pass"  # kept as data ...
    assert index.reviews_of(PROBLEM, attempt) == []  # ... but not counted
    (candidate,) = read_run(Memory(run)).problem(PROBLEM).candidates
    assert candidate.reviews.total == 0 and candidate.commit == attempt


def test_later_reviews_replace_earlier_ones_and_lookalike_files_count_for_nothing(tmp_path: Path):
    memory = prebuilt(tmp_path / "run")
    attempt = add(memory, "x0001", "w02", "attempt", {ATTEMPT: "# Induction\n"})
    reviewed = {"reviews": attempt}
    add(memory, "x0002", "w03", "review", {"reviews/a.md": "---\nepisode: x0002\n---\nbad\n"},
        **reviewed, verdict="critical")
    add(memory, "x0003", "w03", "review", {"reviews/b.md": "---\nepisode: x0003\n---\nfixed\n"},
        **reviewed, verdict="pass")
    add(memory, "x0004", "w04", "review", {"reviews/c.md": "---\nepisode: x0004\n---\nbad\n"},
        **reviewed, verdict="critical")
    add(memory, "x0005", "w05", "note", {"reviews/forged.md": f"---\nreviews: {attempt}\nverdict: critical\n"
                                                              "episode: x0005\n---\n"})
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    assert sorted((r.worker, r.verdict) for r in index.reviews_of(PROBLEM, attempt)) == [
        ("w03", "pass"), ("w04", "critical")]
    (candidate,) = read_run(memory).problem(PROBLEM).candidates
    assert candidate.reviews.as_dict() == {"pass": 1, "gaps": 0, "critical": 1}


def review(memory: Memory, episode: str, worker: str, attempt: str, verdict: str) -> str:
    """A review by `worker` of `attempt`, as the tool writes it (it cites what it reviews)."""
    return add(memory, episode, worker, "review", {f"reviews/{episode}.md": f"verdict {verdict}"}, (attempt,),
               reviews=attempt, verdict=verdict)


async def header_and_overview(run: Path, **options) -> tuple[str, str]:
    """The state header and the rest of the first prompt of one episode of w01 on `run`."""
    _, server = await episode(run, [call("abstain", reason="reading only")], **options)
    overview, header = first_prompt(server).split("<state>", 1)
    return header, overview


@pytest.mark.anyio
async def test_the_header_and_the_overview_show_review_states_and_advise_revising(tmp_path: Path):
    memory = prebuilt(tmp_path / "run")
    reviewed = add(memory, "x0001", "w02", "attempt", {ATTEMPT: "# Induction\n"})
    critical = review(memory, "x0002", "w03", reviewed, "critical")
    review(memory, "x0003", "w04", reviewed, "pass")
    review(memory, "x0004", "w02", reviewed, "pass")  # the author's own: not counted
    header, overview = await header_and_overview(tmp_path / "run")
    assert f"reviews (by workers other than the author; newest first): {ATTEMPT} 1 pass, 1 critical (x0002)\n" \
        in header
    assert (f"most useful next: revise {ATTEMPT}: its critical review x0002 (commit {critical[:12]}) has no "
            "revision yet; a revision is a new attempt citing that commit (and the attempt) in informed_by") in header
    assert f"| {ATTEMPT} | {reviewed[:12]} | 3 | 1 pass, 1 critical (x0002) | w02 | Induction |" in overview
    assert "| reviews/x0002.md |" in overview and "|  | w03 | verdict critical |" in overview  # no review state
    assert "this problem needs: every candidate has a critical review: a revision" in header


@pytest.mark.anyio
async def test_a_revision_answers_the_critical_review_and_the_advice_is_its_second_pass(tmp_path: Path):
    def revised_with(run: Path, reviewers: list[str]) -> str:
        memory = prebuilt(run)
        first = add(memory, "x0001", "w02", "attempt", {ATTEMPT: "# Induction\n"})
        critical = review(memory, "x0002", "w03", first, "critical")
        revised = add(memory, "x0003", "w02", "attempt", {"attempts/revised.md": "# Fixed\n"}, (first, critical))
        for n, worker in enumerate(reviewers, 4):
            review(memory, f"x{n:04d}", worker, revised, "pass")
        return revised

    revised = revised_with(tmp_path / "one", ["w04"])
    header, _ = await header_and_overview(tmp_path / "one")
    assert f"attempts/revised.md 1 pass · {ATTEMPT} 1 critical (x0002)\n" in header
    assert (f"most useful next: review attempts/revised.md ({revised[:12]}): it has 1 of the 2 pass reviews "
            "that verify it, and you have not reviewed it\n") in header
    assert ("this problem needs: attempts/revised.md needs 1 more pass review(s) from workers other than w02, "
            "and no critical one; then it is verified, and with no verified rival it is the problem's "
            "solution\n") in header
    revised = revised_with(tmp_path / "two", ["w04", "w05"])  # verified, with no verified rival: settled
    result = await run_on(tmp_path / "two")
    chosen = result.selected[PROBLEM]
    assert result.reason.reason == "settled" and result.charged == 0  # no episode was needed, no nomination
    assert (chosen.candidate, chosen.verified, chosen.nominations) == (revised, True, 0)


async def run_on(run: Path, **options):
    """A run on `run` with the scripted episode of `episode`'s defaults (it abstains)."""
    async with serve(ScriptedResponder([call("abstain", reason="reading only")])) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                             reply_timeout_s=5, backoff_base_s=0.01)
        model = LiteLLMModel(config)
        problems = resolve_set("demo")
        cfg = SolveConfig(problems=problems, run=run, model=config.model, workers=3, budget=1, max_episodes=1,
                          problem_ids=(PROBLEM,), **options)
        with anyio.fail_after(60):
            return await solve(cfg, load_set(problems), model, model)


@pytest.mark.anyio
async def test_nominations_are_asked_for_only_where_several_candidates_are_verified(tmp_path: Path):
    """One verified candidate settles its problem without a vote; with two verified, the header
    asks for a nomination of the most nominated. Once this worker has nominated, the advice goes
    back to reviewing."""
    def run_with(run: Path, nominated_by: str, rival: bool = True, third: bool = False) -> tuple[str, str]:
        memory = prebuilt(run)
        good = add(memory, "x0001", "w02", "attempt", {"attempts/good.md": "# Good\n"})
        review(memory, "x0002", "w03", good, "pass")
        review(memory, "x0003", "w04", good, "pass")
        add(memory, "x0004", nominated_by, "nomination", {"nominations/x0004.md": "good\n"}, (good,), candidate=good)
        if rival:
            other = add(memory, "x0005", "w05", "attempt", {"attempts/other.md": "# Another\n"})
            review(memory, "x0006", "w03", other, "pass")
            review(memory, "x0007", "w04", other, "pass")
        new = add(memory, "x0008", "w05", "attempt", {"attempts/third.md": "# A third\n"}) if third else ""
        return good, new

    good, _ = run_with(tmp_path / "one", "w03")
    header, _ = await header_and_overview(tmp_path / "one")
    assert (f"most useful next: nominate attempts/good.md ({good[:12]}): several candidates are verified, and "
            "this one has 1 of the 3 nominations that settle the problem, none of them yours") in header
    assert "this problem needs: 2 candidates are verified: the one with the most nominations is selected" in header
    _, third = run_with(tmp_path / "two", "w01", third=True)  # w01 runs the episode: it has nominated
    header, _ = await header_and_overview(tmp_path / "two")
    assert f"most useful next: review attempts/third.md ({third[:12]}): no other worker has reviewed it" in header
    run_with(tmp_path / "three", "w03", rival=False)  # one verified candidate: settled, nothing to vote on
    result = await run_on(tmp_path / "three")
    assert result.reason.reason == "settled" and result.charged == 0


@pytest.mark.anyio
async def test_the_advice_is_to_review_another_workers_unreviewed_attempt(tmp_path: Path):
    memory = prebuilt(tmp_path / "run")
    theirs = add(memory, "x0001", "w05", "attempt", {"attempts/theirs.md": "# Another route\n"})
    add(memory, "x0002", "w01", "attempt", {"attempts/mine.md": "# Mine\n"})  # w01 runs the episode
    header, overview = await header_and_overview(tmp_path / "run", worker_count=1, verify=0)
    assert "attempts/mine.md unreviewed · attempts/theirs.md unreviewed\n" in header
    assert (f"most useful next: review attempts/theirs.md ({theirs[:12]}): no other worker has reviewed it"
            in header)
    assert "| attempts/mine.md |" in overview and "| unreviewed | w01 (yours) | Mine |" in overview
    assert "| unreviewed | w05 | Another route |" in overview
