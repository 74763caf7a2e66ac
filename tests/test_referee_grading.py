"""Grading a run's candidates: answers, programs and proofs (the judge through the fake server)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pygit2
import pytest
from conftest import git, write_set

from gitswarm.domain.contribution import Contribution
from gitswarm.fakeserver import FakeError, FakeReply, FakeServer, ScriptedResponder, serve
from gitswarm.memory import trees
from gitswarm.memory.repo import Memory
from gitswarm.memory.write import committer
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.models.credentials import has_price
from gitswarm.models.errors import ModelError
from gitswarm.problems.frontmatter import render
from gitswarm.problems.loader import load_set
from gitswarm.problems.model import ProblemSet
from gitswarm.referee.answer_judge import parse_equivalent
from gitswarm.referee.grade import GradingError, grade_problem
from gitswarm.referee.grades import GRADES_REF, GradeStore
from gitswarm.referee.proofs import parse_points

HALF = """---
id: half
title: One half
kind: answer
answer: "\\\\frac{1}{2}"
---
What is $1 - 1/2$?
"""

SQUARE = """---
id: square
title: Squares
kind: proof
solution: |
  REFERENCE: write n = 2k + 1 and expand.
grading: |
  GUIDELINE: 7 for the expansion, 1 for the parity of k noticed.
---
Prove that $n^2 - 1$ is divisible by 8 for odd $n$.
"""

PROOF = "Write $n = 2k+1$; then $n^2 - 1 = 4k(k+1)$ and $k(k+1)$ is even. ∎"
GOOD = "def rev(s):\n    return s[::-1]\n"
BAD = "def rev(s):\n    return s\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def litellm_imported() -> None:
    """Pay litellm's import (seconds) once, outside the per-test time limits."""
    has_price(ModelConfig("openai/fake-judge"))


@pytest.fixture
def problem_set(tmp_path: Path) -> ProblemSet:
    folder = write_set(tmp_path / "set")
    (folder / "half.md").write_text(HALF)
    (folder / "square.md").write_text(SQUARE)
    return load_set(folder)


@pytest.fixture
def run(tmp_path: Path, problem_set: ProblemSet) -> Memory:
    return Memory.create(tmp_path / "run", problem_set, run_id="grade-run")


def contribute(memory: Memory, problem: str, files: dict[str, str], episode: str) -> str:
    """Commit an episode's files and compose them into main; the contribution's commit id."""
    written = memory.contribute(Contribution(
        problem=problem, episode=episode, worker="w01", kind="attempt", title=f"attempt {episode}",
        files=files, parent=memory.main(), op=f"op-{episode}"))
    memory.compose()
    return written.commit


def select(memory: Memory, problem: str, candidate: str, path: str, body: str = "") -> None:
    """Write SOLUTION.md on main as the engine does (agents cannot write it)."""
    text = render({"problem": problem, "candidate": candidate, "path": path, "nominations": 2}, body)
    repo = memory.repo
    tip = repo[repo.references["refs/heads/main"].target]
    tree = trees.update(repo, tip.tree, trees.blobs(repo, {f"problems/{problem}/SOLUTION.md": text.encode()}))
    repo.create_commit("refs/heads/main", committer(), committer(), f"solution({problem})\n", tree, [tip.id])


def nominate(memory: Memory, problem: str, slug: str, text: str, episode: str) -> str:
    commit = contribute(memory, problem, {f"attempts/{slug}.md": text}, episode)
    select(memory, problem, commit, f"problems/{problem}/attempts/{slug}.md", text)
    return commit


def judge(server: FakeServer) -> LiteLLMModel:
    return LiteLLMModel(ModelConfig("openai/fake-judge", api_base=server.url, api_key="sk-fake",
                                    backoff_base_s=0.01, backoff_cap_s=0.02))


def test_verdict_parsers():
    assert parse_points("... so\n<points>6</points>") == 6
    assert parse_points("<points>7 out of 7</points>") == 7 and parse_points("<POINTS> 1/7 </POINTS>") == 1
    assert parse_points("<points>7</points> on reflection <points>0</points>") == 0
    for bad in ("", "Score: 7", "<points>5</points>", "<points>seven</points>", "<points>17</points>"):
        assert parse_points(bad) is None
    assert parse_equivalent("<equivalent>Yes</equivalent>") is True
    assert parse_equivalent("<equivalent>no</equivalent>") is False
    assert parse_equivalent("equivalent: yes") is None


@pytest.mark.anyio
async def test_answers_graded_and_idempotent(run: Memory, problem_set: ProblemSet):
    half = problem_set.get("half")
    [none] = await grade_problem(run, half)
    assert none.grade is None and none.note == "no selected solution for half yet"
    commit = nominate(run, "half", "a", "We compute.\n\nAnswer: $0.5$\n", "e1")
    [outcome] = await grade_problem(run, half)
    assert outcome.selected and outcome.candidate.commit == commit
    assert (outcome.grade.score, outcome.grade.details["method"], outcome.reused) == (1.0, "numeric", False)
    [again] = await grade_problem(run, half)
    assert again.reused and again.grade == outcome.grade
    nominate(run, "half", "b", "Answer: 1/3", "e2")
    [wrong] = await grade_problem(run, half)
    assert wrong.grade.score == 0.0
    nominate(run, "half", "c", "It is a half, as shown.", "e3")
    [silent] = await grade_problem(run, half)
    assert silent.grade.score == 0.0 and silent.grade.details["method"] == "no-answer"


@pytest.mark.anyio
async def test_undecided_answer_goes_to_the_referee(run: Memory, problem_set: ProblemSet):
    half = problem_set.get("half")
    nominate(run, "half", "a", "Answer: one half", "e1")
    [undecided] = await grade_problem(run, half)
    assert undecided.grade.score is None and undecided.grade.details["method"] == "undecided"
    [same] = await grade_problem(run, half)
    assert same.reused and len(git(run.path, "rev-list", GRADES_REF).split()) == 1
    replies = [FakeReply(content="No verdict here."), FakeReply(content="<equivalent>yes</equivalent>")]
    with anyio.fail_after(30):
        async with serve(ScriptedResponder(replies)) as server:
            [decided] = await grade_problem(run, half, judge_model=judge(server))
    assert (decided.grade.score, decided.grade.details["method"]) == (1.0, "llm")
    assert decided.grade.model == "openai/fake-judge" and len(decided.grade.judgments[0]["replies"]) == 2
    assert "one half" in server.requests[0]["messages"][0]["content"]


@pytest.mark.anyio
async def test_program_candidates(run: Memory, problem_set: ProblemSet):
    rev = problem_set.get("rev")
    good = contribute(run, "rev", {"code/good/solution.py": GOOD}, "e1")
    bad = contribute(run, "rev", {"code/bad/solution.py": BAD, "code/bad/util.py": "x = 1\n"}, "e2")
    select(run, "rev", good, "problems/rev/code/good", "Program files in `code/good/`")
    outcomes = await grade_problem(run, rev, all_candidates=True)
    by_path = {o.candidate.path: o for o in outcomes}
    assert by_path["problems/rev/code/good"].selected and by_path["problems/rev/code/good"].grade.score == 1.0
    assert by_path["problems/rev/code/good"].grade.details["resolved"] is True
    assert by_path["problems/rev/code/bad"].candidate.commit == bad
    assert by_path["problems/rev/code/bad"].grade.score == 0.0
    assert set(by_path["problems/rev/code/bad"].candidate.files) == {"solution.py", "util.py"}
    assert "HIDDEN-TEST" not in git(run.path, "log", "-p", "--branches")  # nor in what agents read


@pytest.mark.anyio
async def test_every_attempt_is_attributed_to_its_commit(run: Memory, problem_set: ProblemSet):
    first = contribute(run, "half", {"attempts/a.md": "Answer: 1/2", "notes/n.md": "x"}, "e1")
    second = contribute(run, "half", {"attempts/b.md": "Answer: 2"}, "e2")
    contribute(run, "half", {"notes/later.md": "unrelated"}, "e3")
    outcomes = await grade_problem(run, problem_set.get("half"), all_candidates=True)
    found = {o.candidate.path.rsplit("/", 1)[1]: (o.candidate.commit, o.grade.score) for o in outcomes}
    assert found == {"a.md": (first, 1.0), "b.md": (second, 0.0)}
    assert not any(o.selected for o in outcomes)


@pytest.mark.anyio
async def test_proof_median_of_k_with_reasoning_kept(run: Memory, problem_set: ProblemSet):
    square = problem_set.get("square")
    nominate(run, "square", "p", PROOF, "e1")
    replies = [FakeReply(content=f"Judge reasoning {n}.\n<points>{n}</points>") for n in (7, 6, 0)]
    with anyio.fail_after(30):
        async with serve(ScriptedResponder(replies)) as server:
            [outcome] = await grade_problem(run, square, judge_model=judge(server), k=3)
    grade = outcome.grade
    assert (grade.score, grade.max, grade.grader) == (6, 7.0, "proof-judge")
    assert sorted(grade.details["points"]) == [0, 6, 7] and grade.details["spread"] == 7
    assert sorted(j["replies"][0] for j in grade.judgments) == [f"Judge reasoning {n}.\n<points>{n}</points>"
                                                               for n in (0, 6, 7)]
    system, user = server.requests[0]["messages"]
    assert "<points>N</points>" in system["content"] and "override" in system["content"]
    for part in ("REFERENCE: write n", "GUIDELINE: 7", "BEGIN CANDIDATE PROOF", "4k(k+1)", "divisible by 8"):
        assert part in user["content"]


def _corrected(bad_first: int, final: str) -> object:
    """A responder: the first `bad_first` judges answer without a verdict; corrections get `final`."""
    state = {"first": 0}

    def respond(request: dict) -> FakeReply:
        if "could not be recorded" in request["messages"][-1]["content"]:
            return FakeReply(content=final)
        state["first"] += 1
        return FakeReply(content="Looks fine." if state["first"] <= bad_first else "Good.\n<points>7</points>")
    return respond


@pytest.mark.anyio
async def test_malformed_verdict_corrected_once(run: Memory, problem_set: ProblemSet):
    nominate(run, "square", "p", PROOF, "e1")
    with anyio.fail_after(30):
        async with serve(_corrected(2, "<points>6</points>")) as server:
            [outcome] = await grade_problem(run, problem_set.get("square"), judge_model=judge(server), k=3)
    assert outcome.grade.score == 6 and sorted(outcome.grade.details["points"]) == [6, 6, 7]
    assert len(server.requests) == 5
    corrected = [r for r in server.requests if len(r["messages"]) == 4]
    assert len(corrected) == 2 and corrected[0]["messages"][2]["content"] == "Looks fine."


@pytest.mark.anyio
async def test_malformed_twice_is_ungraded_then_graded_again(run: Memory, problem_set: ProblemSet):
    square = problem_set.get("square")
    nominate(run, "square", "p", PROOF, "e1")
    with anyio.fail_after(30):
        async with serve(_corrected(3, "I would rather not say. <points>5</points>")) as server:
            [outcome] = await grade_problem(run, square, judge_model=judge(server), k=3)
    grade = outcome.grade
    assert grade.score is None and grade.details["ungraded"] == 3 and grade.details["points"] == []
    assert all(j["verdict"] is None and "after one correction" in j["error"] for j in grade.judgments)
    assert len(server.requests) == 6
    replies = [FakeReply(content="<points>1</points>")] * 3
    with anyio.fail_after(30):
        async with serve(ScriptedResponder(replies)) as server:
            [outcome] = await grade_problem(run, square, judge_model=judge(server), k=3)
    assert outcome.grade.score == 1 and not outcome.reused
    assert [g.score for g in GradeStore(run).history(outcome.grade.key)] == [1, None]


@pytest.mark.anyio
async def test_regrade_is_idempotent_and_force_keeps_history(run: Memory, problem_set: ProblemSet):
    square = problem_set.get("square")
    nominate(run, "square", "p", PROOF, "e1")
    replies = [FakeReply(content="<points>7</points>")] * 3 + [FakeReply(content="<points>0</points>")] * 3
    with anyio.fail_after(30):
        async with serve(ScriptedResponder(replies)) as server:
            model = judge(server)
            [first] = await grade_problem(run, square, judge_model=model)
            [again] = await grade_problem(run, square, judge_model=model)
            assert again.reused and again.grade == first.grade and len(server.requests) == 3
            [forced] = await grade_problem(run, square, judge_model=model, force=True)
    assert (first.grade.score, forced.grade.score, forced.reused) == (7, 0, False)
    assert [g.score for g in GradeStore(run).history(forced.grade.key)] == [0, 7]
    assert len(git(run.path, "rev-list", GRADES_REF).split()) == 2


@pytest.mark.anyio
async def test_proof_needs_a_referee_model(run: Memory, problem_set: ProblemSet):
    nominate(run, "square", "p", PROOF, "e1")
    with pytest.raises(GradingError, match="referee model"):
        await grade_problem(run, problem_set.get("square"))


def test_fixture_commit_is_on_main(run: Memory):
    select(run, "half", run.main(), "problems/half/statement.md", "body")
    assert run.read_file("problems/half/SOLUTION.md").startswith(b"---\n")
    assert isinstance(run.repo[run.main()], pygit2.Commit)


@pytest.mark.anyio
async def test_a_failing_setup_stops_grading_without_a_grade(run: Memory, problem_set: ProblemSet):
    nominate(run, "square", "p", PROOF, "e1")
    refused = FakeError(401, "invalid api key", kind="authentication_error", code="invalid_api_key")
    with anyio.fail_after(30):
        async with serve(ScriptedResponder([refused] * 3)) as server:
            with pytest.raises(ModelError) as caught:
                await grade_problem(run, problem_set.get("square"), judge_model=judge(server))
    assert caught.value.kind == "auth" and GradeStore(run).for_problem("square") == []
