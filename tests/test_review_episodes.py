"""Reviews that are not the author's echo: review episodes assigned to one candidate and run on
a reviewer model of their own, blind reviews, K passes in a row, and best-of-n (independent
attempts selected by blind reviews). The real engine against fake servers, the requests and
the run's history read back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from conftest import git
from pydantic import ValidationError
from test_isolation import MARK, marking
from test_projection_agreement import add
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.cli.running import clients
from gitswarm.demo.brain import respond
from gitswarm.domain import selection
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.context import header
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.plan import Assignment, EpisodePlan, Role, plan, terms
from gitswarm.engine.run import solve
from gitswarm.engine.runview import RunView
from gitswarm.engine.tools import Toolbox, ToolError
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.problems.loader import load_set
from gitswarm.readmodel.read import read_run
from gitswarm.report.collect import collect
from gitswarm.report.render import to_markdown
from gitswarm.resources import resolve_set

ASSIGNED = re.compile(r"^assignment: review (\S+) \(", re.MULTILINE)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def kinds_offered(request: dict) -> list[str] | None:
    """The kinds `contribute` offers in `request` (None: no contribute tool)."""
    for tool in request.get("tools") or []:
        if tool["function"]["name"] == "contribute":
            return tool["function"]["parameters"]["properties"]["kind"]["enum"]
    return None


def is_review(request: dict) -> bool:
    return "You are a reviewer" in request["messages"][0]["content"]


async def solved(problem_dir: Path, run: Path, worker_reply=respond, reviewer_reply=respond, **options):
    """`problem_dir` solved into `run` with the workers' model and the reviewer model each behind a
    fake server of its own, the clients built as `gitswarm solve` builds them; (RunResult, the
    workers' server, the reviewer's server)."""
    async with serve(worker_reply) as workers, serve(reviewer_reply) as reviewers:
        cfg = SolveConfig(problems=problem_dir, run=run, model="openai/worker-model", api_base=workers.url,
                          api_key="k", reviewer_api_base=reviewers.url, reply_timeout_s=5, **options)
        model, merger, reviewer = clients(cfg.models)  # as `gitswarm solve` builds them
        with anyio.fail_after(180):
            result = await solve(cfg, load_set(problem_dir), model, merger, reviewer=reviewer)
    return result, workers, reviewers


def records(run: Path) -> list[dict]:
    """The ledger's episode records, the merger's left out."""
    found = Ledger.load(Memory(run)).episodes.values()
    return [vars(r) for r in found if r.episode != "merger"]


@pytest.mark.anyio
async def test_review_episodes_go_to_the_reviewer_model_and_no_other(tmp_path: Path):
    run = tmp_path / "run"
    result, workers, reviewers = await solved(resolve_set("demo"), run, reviewer_model="openai/reviewer-model",
                                              workers=4, budget=30)
    assert all(chosen is not None and chosen.verified for chosen in result.selected.values())
    episodes = [r for r in workers.requests + reviewers.requests if r.get("tools")]
    asked = [r for r in reviewers.requests if r.get("tools")]
    assert asked and all(r["model"] == "reviewer-model" and is_review(r) for r in asked)
    assert all(kinds_offered(r) == ["review"] for r in asked)
    for request in asked:  # it sees the memory, and is told its one task
        first = request["messages"][1]["content"]
        assert "Memory overview" in first and "Check the candidate you were assigned" in first
        assert "# How to work on a" not in first  # a worker's guide to writing code is not a reviewer's
    for request in [r for r in workers.requests if r.get("tools")]:
        assert not is_review(request) and "review" not in kinds_offered(request)
    assert len(episodes) == len(asked) + len([r for r in workers.requests if r.get("tools")])
    kept = records(run)
    reviews = [r for r in kept if r["reviews"]]
    assert reviews and all(r["model"] == "openai/reviewer-model" for r in reviews)
    assert all(r["model"] == "openai/worker-model" for r in kept if not r["reviews"])
    index = MemoryIndex()
    indexing.update(index, Memory(run).repo, Memory(run).main())
    committed = {r["commit"] for r in reviews if r["status"] == "contribute"}
    counted = {v.commit for p in index.problems.values() for by in p.reviews.values() for v in by.values()}
    assert counted and counted <= committed  # every review on main is a reviewer episode's
    trailers = git(run, "log", "main", "--format=%s%x00%(trailers:key=Gitswarm-Model,valueonly,separator=)")
    shown = [line.split("\0") for line in trailers.splitlines() if "\0" in line]
    assert all(model == "openai/reviewer-model" for subject, model in shown if subject.startswith("review("))
    assert any(subject.startswith("review(") for subject, _ in shown)
    report, _ = collect(run)  # the report says what each role spent, on which model
    roles = {(r["role"], r["model"]): r for r in report.roles}
    assert set(roles) == {("workers", "openai/worker-model"), ("reviews", "openai/reviewer-model"),
                          ("merger", "openai/worker-model")}
    assert roles[("reviews", "openai/reviewer-model")]["calls"] == len(reviewers.requests)
    assert roles[("reviews", "openai/reviewer-model")]["episodes"] == len(reviews)
    assert "reviews assigned to one candidate each on openai/reviewer-model" in to_markdown(report)


@pytest.mark.anyio
async def test_a_blind_review_reads_the_statement_and_its_candidate_alone(tmp_path: Path):
    run = tmp_path / "run"
    result, workers, reviewers = await solved(resolve_set("demo"), run, reviews="blind", workers=4, budget=30)
    assert all(chosen is not None and chosen.verified for chosen in result.selected.values())
    assert not reviewers.requests  # no reviewer model: the reviews run on the workers' model
    blind = [r for r in workers.requests if r.get("tools") and is_review(r)]
    assert blind
    for request in blind:
        first = request["messages"][1]["content"]
        target, own = ASSIGNED.search(first).group(1), re.search(r"episode: (e\d+)", first).group(1)
        read = [m for m in request["messages"] if m["role"] != "assistant"]  # what it was shown, not what it wrote
        text = json.dumps(read).replace(f"reviews/review-{own}.md", "")
        assert "You review it blind" in request["messages"][0]["content"]
        assert "notes/" not in text and "reviews/review-" not in text and "SUMMARY" not in text
        assert "Memory overview" not in text and "self_assessment" not in text and "Self-assessment" not in text
        others = set(re.findall(r"(?:attempts/[\w.-]+\.md|code/e\d+)", text)) - {target}
        assert not others, (target, others)  # no other candidate either
        names = {t["function"]["name"] for t in request["tools"]}
        assert names.isdisjoint({"list_items", "search", "in_flight", "announce", "nominate"})
        told = {t["function"]["name"]: t["function"] for t in request["tools"]}
        assert {"reviews", "verdict"} <= set(told["contribute"]["parameters"]["required"])
        assert "reviews/" in told["write_file"]["description"] and "lemmas/" not in told["read_file"]["description"]
        system = request["messages"][0]["content"]  # a reviewer's standards, not a worker's
        assert "A review verifies" in system or "A review of a program" in system
        assert "Put each codebase in one folder" not in system and "If your\n  proof is not" not in system
    free = [r for r in workers.requests if r.get("tools") and not is_review(r)]
    assert free and all("review" not in kinds_offered(r) for r in free)
    assert all("`contribute` the review" not in r["messages"][0]["content"] for r in free)  # told what it can do
    shown = CliRunner().invoke(app, ["status", str(run)])
    assert shown.exit_code == 0 and "rule: verify K = 2, reviews blind, isolation shared" in shown.output
    said = [json.loads(line)["data"] for line in (run / "gitswarm-events.jsonl").read_text().splitlines()
            if '"committed"' in line]
    assert any(d.get("verdict") and d.get("reviews") for d in said)  # the events name each blind review's verdict


@pytest.mark.anyio
async def test_a_blind_review_cannot_read_past_its_candidate(tmp_path: Path):
    problem_set = load_set(resolve_set("demo"))
    memory = Memory.create(tmp_path / "run", problem_set)
    note = memory.contribute(Contribution(problem="demo-odd-sum", episode="e00001", worker="w01", kind="note",
                                          title="a note", files={"notes/n.md": "the author's notes"},
                                          parent=memory.main(), op="e00001-final"))
    memory.compose()
    attempt = memory.contribute(Contribution(problem="demo-odd-sum", episode="e00002", worker="w01",
                                             kind="attempt", title="an attempt", files={"attempts/a.md": "Proof."},
                                             parent=memory.main(), op="e00002-final", informed_by=(note.commit,)))
    memory.compose()
    cfg = SolveConfig(problems=resolve_set("demo"), run=memory.path, model="m", reviews="blind")
    ep = EpisodePlan("e00003", "w02", "demo-odd-sum", "proof", "Odd sum", attempt.commit,
                     role=Role.BLIND, review=Assignment("attempts/a.md", attempt.commit, blind=True),
                     terms=terms(cfg, "proof"))
    tools = Toolbox(Store(memory), MemoryIndex(), RunView(), ep, anyio.CapacityLimiter(1))
    assert "Proof." in await tools.call("read_file", {"path": "attempts/a.md"})
    assert "odd" in (await tools.call("read_file", {"path": "statement.md"})).lower()
    with pytest.raises(ToolError, match="a blind review reads the problem's own files"):
        await tools.call("read_file", {"path": "notes/n.md"})
    for name in ("list_items", "search", "nominate", "announce"):
        with pytest.raises(ToolError, match="there is no tool"):
            await tools.call(name, {})
    with pytest.raises(ToolError, match="writes its review, under reviews/"):
        await tools.call("write_file", {"path": "notes/x.md", "content": "x"})
    await tools.call("write_file", {"path": "reviews/r.md", "content": "Checked: pass."})
    with pytest.raises(ToolError, match="the candidate it was assigned"):
        await tools.call("contribute", {"kind": "review", "title": "t", "summary": "s", "reviews": "attempts/b.md",
                                        "verdict": "pass"})
    final = await tools.call("contribute", {"kind": "review", "title": "t", "summary": "s",
                                            "reviews": "attempts/a.md", "verdict": "pass"})
    assert final.contribution.reviews == attempt.commit and final.contribution.parent == attempt.commit
    assert list(final.contribution.files) == ["reviews/r.md"]


def review(memory: Memory, episode: str, worker: str, candidate: str, verdict: str) -> None:
    add(memory, episode, worker, "review", {f"reviews/{episode}.md": f"{verdict}."}, reviews=candidate,
        verdict=verdict)


def verified(memory: Memory, candidate: str, rule: Rule) -> bool:
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    engine = candidate in {s.commit for s in selection.verified_of(selection.standings(index, "sum", rule), rule)}
    memory.put_records("ledger", {"scheduler.json": {"selection": rule.as_record()}}, "ledger: the rule")
    shown = {c.commit: c.verified for c in read_run(memory).problem("sum").candidates}
    assert shown[candidate] == engine  # the views count as selection does
    return engine


def test_an_episode_that_may_not_review_is_told_when_only_a_review_is_needed(memory: Memory, problem_dir: Path):
    add(memory, "e01", "w01", "attempt", {"attempts/a.md": "Answer: 7"})
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    for reviews, told in (("blind", True), ("open", False)):
        cfg = SolveConfig(problems=problem_dir, run=memory.path, model="m", reviews=reviews)
        ep = plan(cfg, "e02", "w02", ("sum", "answer", "A sum", None), (memory.main(), memory.main()), None)
        head = header(RunView(problems=["sum"]), index, ep, 1, [])
        assert ("which the scheduler assigns to review episodes" in head) is told, reviews
        assert ("most useful next: review attempts/a.md" in head) is not told, reviews


def test_k_passes_in_a_row_restart_after_a_gaps_review_and_on_a_revision(memory: Memory):
    in_row, in_all = Rule(verify=2, in_row=True), Rule(verify=2)
    a = add(memory, "e01", "w01", "attempt", {"attempts/a.md": "Answer: 7"})
    review(memory, "e02", "w02", a, "pass")
    review(memory, "e03", "w03", a, "gaps")
    review(memory, "e04", "w04", a, "pass")
    assert verified(memory, a, in_all) and not verified(memory, a, in_row)  # the gaps review broke the row
    review(memory, "e05", "w05", a, "pass")
    assert verified(memory, a, in_row)  # two passes since the gaps review
    b = add(memory, "e06", "w01", "attempt", {"attempts/b.md": "Answer: 8"})
    review(memory, "e07", "w02", b, "pass")
    review(memory, "e08", "w03", b, "critical")
    review(memory, "e09", "w04", b, "pass")
    assert not verified(memory, b, in_row) and not verified(memory, b, in_all)  # critical blocks for good
    c = add(memory, "e10", "w01", "attempt", {"attempts/c.md": "Answer: 7, revised"})
    review(memory, "e11", "w05", c, "pass")
    assert not verified(memory, c, in_row)  # the revision counts from zero
    review(memory, "e12", "w03", c, "pass")
    assert verified(memory, c, in_row)


def best_of_n() -> tuple:
    """test_isolation's marking model (attempts carrying a mark of their own, answer 7 twice out
    of three times, else 8, trying first to read others' work), whose reviews pass an attempt
    answering 7 and find a critical error in any other. Returns (responder, the review requests'
    marks)."""
    attempts, reviewed = marking(), []

    def reply(request: dict) -> FakeReply:
        messages = request["messages"]
        if not request.get("tools") or not is_review(request):
            return attempts(request) if request.get("tools") else respond(request)  # the merger's: the brain
        first = messages[1]["content"]
        target = ASSIGNED.search(first).group(1)
        if sum(m["role"] == "assistant" for m in messages) == 0:
            reviewed.append((target, MARK.findall(json.dumps(messages))))
            return FakeReply(tool_calls=[{"name": "write_file", "arguments": {
                "path": "reviews/r.md", "content": "Checked the sum."}}])
        verdict = "pass" if "Answer: 7" in first else "critical"
        return FakeReply(tool_calls=[{"name": "contribute", "arguments": {
            "kind": "review", "title": "a check", "summary": "Checked.", "reviews": target, "verdict": verdict}}])

    return reply, reviewed


@pytest.mark.anyio
async def test_best_of_n_attempts_never_see_each_other_and_reviews_select(tmp_path: Path, problem_dir: Path):
    run = tmp_path / "run"
    reply, reviewed = best_of_n()
    result, workers, _ = await solved(problem_dir, run, reply, reply, isolation="best-of-n", workers=3, budget=12,
                                      problem_ids=("sum",))
    for request in workers.requests:
        if request.get("tools") and not is_review(request):
            assert len(set(MARK.findall(json.dumps(request["messages"])))) <= 1  # its own attempt at most
    assert reviewed and all(marks and set(marks) == {target.removeprefix("attempts/").removesuffix(".md").upper()}
                            for target, marks in reviewed)  # a review sees its candidate alone
    chosen = result.selected["sum"]
    assert chosen is not None and chosen.verified
    solution = git(run, "show", "main:problems/sum/SOLUTION.md")
    assert "verification: verified" in solution and "Answer: 7" in solution
    assert not re.search(r"^nominat", git(run, "log", "main", "--format=%s"), re.M)  # best-of-n nominates nothing


def test_every_role_s_system_prompt_starts_with_its_text(problem_dir: Path, tmp_path: Path):
    from gitswarm.engine.context import system_prompt

    for reviews in ("open", "blind"):
        cfg = SolveConfig(problems=problem_dir, run=tmp_path / "r", model="m", reviews=reviews)
        for kind in ("proof", "program"):
            for review in (None, Assignment("attempts/a.md", "c" * 40, reviews == "blind")):
                ep = plan(cfg, "e1", "w01", ("p", kind, "P", None), ("c" * 40, "r" * 40), review)
                text = system_prompt(ep)
                assert text.startswith("You are "), (reviews, kind, review, text[:40])


def test_settings_that_ask_for_reviews_where_none_are_written_are_refused(problem_dir: Path, tmp_path: Path):
    base = {"problems": problem_dir, "run": tmp_path / "r", "model": "m"}
    with pytest.raises(ValidationError, match="best-of-n selects by reviews"):
        SolveConfig(**base, isolation="best-of-n", verify=0)
    with pytest.raises(ValidationError, match=r"--reviews blind sets how reviews .*, but isolation independent"):
        SolveConfig(**base, isolation="independent", reviews="blind")
    with pytest.raises(ValidationError, match="--reviewer-model sets how reviews are written, but verify=0"):
        SolveConfig(**base, reviewer_model="openai/r", verify=0)
    assert SolveConfig(**base, reviewer_model="openai/r").reviews == "assigned"
    assert SolveConfig(**base, reviewer_model="openai/r", reviews="blind").blind
