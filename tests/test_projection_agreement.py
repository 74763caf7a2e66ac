"""One projection of a run: the engine's state and every view of it agree, problem by problem.

Scripted runs (the demo's brain behind the real fake server, through the real engine) with
different seeds, worker counts and rules: what the engine selected and the state it resumes
with (`run.load_state`: its index, its settled problems) equal what the read model, `status`
and the report show. And a review file rewritten at the same path by a later review, written
with the memory API in a real repository: selection, the read model, `status`, the report and
the dashboard's snapshot name the same leader, verified or not, and the same settling.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from conftest import git
from demo_run import run_demo
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain import selection
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import Rule
from gitswarm.domain.selection import Selection
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.kernel import load_state
from gitswarm.engine.selection import select
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.readmodel.model import ProblemState
from gitswarm.readmodel.read import read_run
from gitswarm.resources import resolve_set
from gitswarm.tui.reader import Snapshots

runner = CliRunner()

RUNS = [  # (seed, workers, verify, settle_nominations, budget): a run takes 40 s on 2 busy cores
    pytest.param(29, 4, 1, 1, 20, id="settles-some"),  # three problems settled at the stop, two not
    pytest.param(11, 3, 2, 3, 24, id="default-rule", marks=pytest.mark.e2e),
    pytest.param(47, 5, 0, 2, 30, id="plurality", marks=pytest.mark.e2e),
    pytest.param(83, 4, 2, 3, 9, id="stopped-early", marks=pytest.mark.e2e),  # candidates, no nomination
]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def engine_state(run: Path, cfg: SolveConfig) -> tuple[MemoryIndex, set[str]]:
    """The index and the settled problems the engine resumes this run with (its own code)."""
    memory = Memory(run)

    async def load():
        _, index, view = await load_state(cfg, Store(memory), memory.problems())
        return index, view.settled

    return anyio.run(load)


def views(run: Path) -> dict[str, dict[str, tuple]]:
    """Each problem as `status --json` and the report's JSON show it: (state, the candidate it
    stands on, its verification, the selected commit, each candidate commit's (nominations,
    passes, critical reviews))."""
    status = runner.invoke(app, ["status", str(run), "--json"])
    report = runner.invoke(app, ["report", str(run), "-f", "json"])
    assert status.exit_code == 0 and report.exit_code == 0, status.output + report.output
    shown: dict[str, dict[str, tuple]] = {"status": {}, "report": {}}
    for p in json.loads(status.output)["problems"]:
        shown["status"][p["id"]] = (p["state"], p["selected_commit"] or p["top_candidate"], p["verification"],
                                    p["selected_commit"], _counted(p["candidates"]))
    for p in json.loads(report.output)["problems"]:
        stands_on = [c["commit"] for c in p["candidates"] if c["path"] == p["trail_of"]]
        shown["report"][p["id"]] = (p["state"], p["selected"] or (stands_on[0] if len(stands_on) == 1 else None),
                                    p["verification"], p["selected"], _counted(p["candidates"]))
    return shown


def _counted(candidates: list[dict]) -> dict[str, tuple[int, int, int]]:
    return {c["commit"]: (c["nominations"], c["reviews"]["pass"], c["reviews"]["critical"]) for c in candidates}


def as_views_show(problem: ProblemState) -> tuple:
    """The read model's problem in the form of `views`."""
    stands_on = problem.selected.candidate if problem.selected else problem.leading
    return (problem.state, stands_on, problem.verification, problem.selected.candidate if problem.selected else None,
            {c.commit: (c.nominations, c.reviews.passed, c.reviews.critical) for c in problem.candidates})


def agree(problem: ProblemState, index: MemoryIndex, rule: Rule, settled: set[str],
          selected: Selection | None) -> None:
    """The read model's view of one problem is the engine's."""
    pid = problem.id
    engine = {s.commit: (s.nominations, s.passes, s.critical) for s in selection.standings(index, pid, rule)}
    shown = {c.commit: (c.nominations, c.reviews.passed, c.reviews.critical) for c in problem.candidates
             if c.commit in engine}
    assert shown == engine, pid
    assert all(c.nominations == 0 for c in problem.candidates if c.commit not in engine), pid
    for c in problem.candidates:
        reviews = index.reviews_of(pid, c.commit, rule.people_count)
        assert c.reviews.total == len(reviews), (pid, c.path)
        assert c.verified == rule.is_verified(c.reviews.passed, c.reviews.critical)
    leader = selection.leader(index, pid, rule)
    assert problem.leading == (leader.commit if leader else None), pid
    assert problem.verified == (leader.verified if leader else None), pid
    standing = problem.standing
    rivals = len({c.commit for c in problem.candidates if c.commit in engine and c.verified
                  and (rule.verify or c.nominations)})
    said_settled = bool(standing and problem.verified and (standing.nominations >= rule.settle_nominations
                                                           or (rule.verify and rivals == 1)))
    assert said_settled == (pid in settled), pid
    if selected is None:
        assert problem.selected is None and (problem.state == "settled") == (pid in settled), pid
        return
    assert (problem.selected.candidate, problem.selected.path, problem.selected.nominations,
            problem.selected.verified) == (selected.candidate, selected.path, selected.nominations, selected.verified)
    assert problem.state == "selected" and problem.leading == selected.candidate, pid


@pytest.mark.parametrize(("seed", "workers", "verify", "settle", "budget"), RUNS)
def test_the_engine_and_the_views_agree_on_every_problem_of_a_scripted_run(
        tmp_path: Path, seed: int, workers: int, verify: int, settle: int, budget: int):
    run = tmp_path / "run"
    result = anyio.run(lambda: run_demo(run, seed=seed, workers=workers, verify=verify,
                                        settle_nominations=settle, budget=budget))
    cfg = SolveConfig(problems=resolve_set("demo"), run=run, model="openai/gitswarm-scripted", seed=seed,
                      workers=workers, verify=verify, settle_nominations=settle, budget=budget)
    index, settled = engine_state(run, cfg)
    rule = Rule.of(cfg)
    state = read_run(Memory(run))
    assert set(result.selected) == {p.id for p in state.problems}
    for problem in state.problems:
        agree(problem, index, rule, settled, result.selected[problem.id])
    for name, by_id in views(run).items():
        assert by_id == {p.id: as_views_show(p) for p in state.problems}, name

    before = before_selection(run, tmp_path / "before")  # the run as it stopped: settled, not yet selected
    index, settled = engine_state(before, cfg.model_copy(update={"run": before}))
    state = read_run(Memory(before))
    assert {p.id for p in state.problems if p.state == "settled"} == settled
    for problem in state.problems:
        agree(problem, index, rule, settled, None)
    for name, by_id in views(before).items():
        assert by_id == {p.id: as_views_show(p) for p in state.problems}, name


def before_selection(run: Path, copy: Path) -> Path:
    """A copy of `run` whose main is the last commit before the selection's SOLUTION.md commits."""
    shutil.copytree(run, copy, symlinks=True)
    kinds = git(copy, "log", "--first-parent", "--format=%H %(trailers:key=Gitswarm-Kind,valueonly,separator=)",
                "main").splitlines()
    tip = next(line.split()[0] for line in kinds if not line.endswith(" solution"))
    git(copy, "update-ref", "refs/heads/main", tip)
    return copy


def add(memory: Memory, episode: str, worker: str, kind: str, files: dict[str, str], **record: str) -> str:
    """One contribution to `sum` by `worker`, composed into main; returns its commit."""
    written = memory.contribute(Contribution(
        problem="sum", episode=episode, worker=worker, kind=kind, title=f"{kind} of {episode}", files=files,
        parent=memory.main(), op=f"{episode}-final", **record))
    memory.compose()
    return written.commit


def review(memory: Memory, episode: str, worker: str, candidate: str, verdict: str, path: str) -> None:
    """A review as the contribute tool writes it: front matter naming its episode, and trailers."""
    head = f"---\nreviews: {candidate}\npath: attempts/a.md\nverdict: {verdict}\nepisode: {episode}\n---\n\n"
    add(memory, episode, worker, "review", {path: head + f"{verdict}."}, reviews=candidate, verdict=verdict)


def nominate(memory: Memory, episode: str, worker: str, candidate: str, path: str) -> None:
    add(memory, episode, worker, "nomination",
        {f"nominations/{episode}.md": f"---\ncandidate: {candidate}\npath: {path}\n---\n\nbest\n"}, candidate=candidate)


def test_a_review_file_rewritten_at_the_same_path_hides_nothing_from_any_view(memory: Memory):
    """w04's critical review of `a` is overwritten by w05's review of `b` at the same path. The
    critical review still blocks `a` (its commit is on main), so the leader is `b`, verified,
    with one nomination: not `a` with three; with no verified rival, `b` settles the problem."""
    run = memory.path
    a = add(memory, "e01", "w01", "attempt", {"attempts/a.md": "Answer: 7"})
    b = add(memory, "e02", "w01", "attempt", {"attempts/b.md": "Answer: 7, by another way"})
    review(memory, "e03", "w02", a, "pass", "reviews/r2.md")
    review(memory, "e04", "w03", a, "pass", "reviews/r3.md")
    review(memory, "e05", "w04", a, "critical", "reviews/shared.md")
    review(memory, "e06", "w05", b, "pass", "reviews/shared.md")  # the same path: w04's file is gone from main
    review(memory, "e07", "w06", b, "pass", "reviews/r6.md")
    for n, worker in ((8, "w02"), (9, "w03"), (10, "w04")):
        nominate(memory, f"e{n:02d}", worker, a, "attempts/a.md")
    nominate(memory, "e11", "w05", b, "attempts/b.md")
    rule = Rule()
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    leader = selection.leader(index, "sum", rule)
    assert (leader.commit, leader.verified, leader.nominations) == (b, True, 1)
    assert selection.settled(index, ["sum"], rule) == {"sum"}

    def check(state: str, verification: str) -> None:
        for problem in (read_run(Memory(run)).problem("sum"), Snapshots().read(Memory(run)).problem("sum")):
            assert (problem.state, problem.leading, problem.verification) == (state, b, verification)
            by_commit = {c.commit: c for c in problem.candidates}
            assert by_commit[a].reviews.as_dict() == {"pass": 2, "gaps": 0, "critical": 1}
            assert not by_commit[a].verified and by_commit[b].verified
            assert [(r.worker, r.verdict, r.path) for r in by_commit[a].trail][-1] == (
                "w04", "critical", "problems/sum/reviews/shared.md")
            agree(problem, index, rule, {"sum"}, None if state != "selected" else chosen)
        for name, by_id in views(run).items():
            assert by_id["sum"] == as_views_show(problem), name

    chosen = None
    check("settled", "verified")
    chosen = select(memory, index, "sum", rule)  # the engine's own selection
    assert (chosen.candidate, chosen.verified, chosen.path) == (b, True, "problems/sum/attempts/b.md")
    check("selected", "verified")


@pytest.mark.parametrize("counts", [False, True], ids=["advice", "counts"])
def test_a_persons_critical_review_counts_as_the_runs_rule_says_in_the_engine_and_every_view(
        memory: Memory, counts: bool):
    """Two workers passed `a`; a person's critical review of it is advice (shown, not counted:
    `a` stays verified and settles) or counts (it blocks `a`) as `person_reviews` says, and the
    engine's selection, the read model, `status` and the report agree on which."""
    a = add(memory, "e01", "w01", "attempt", {"attempts/a.md": "Answer: 7"})
    review(memory, "e02", "w02", a, "pass", "reviews/r2.md")
    review(memory, "e03", "w03", a, "pass", "reviews/r3.md")
    memory.contribute(Contribution(
        problem="sum", episode="person-20261206T000000-aaaaaa", worker="person-ada", kind="review",
        title="critical", files={"reviews/person-a.md": "The step fails."}, parent=memory.main(),
        op="person-20261206T000000-aaaaaa", informed_by=(a,), reviews=a, verdict="critical",
        person=("Ada Lovelace", "ada@example.org")))
    memory.compose()
    cfg = SolveConfig(problems=Path("."), run=memory.path, model="m", workers=3,
                      person_reviews="counts" if counts else "advice")
    rule = Rule.of(cfg)
    memory.put_records("ledger", {"scheduler.json": {"selection": rule.as_record()}}, "the run's rule")
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    leader = selection.leader(index, "sum", rule)
    assert leader is not None and leader.commit == a and leader.verified is (not counts)
    settled = selection.settled(index, ["sum"], rule)
    assert settled == (set() if counts else {"sum"})
    state = read_run(memory)
    agree(state.problem("sum"), index, rule, settled, None)
    [shown] = [c for c in state.problem("sum").candidates if c.commit == a]
    assert shown.reviews.critical == int(counts) and [r.person for r in shown.trail].count(True) == 1
    for name, by_id in views(memory.path).items():
        assert by_id == {p.id: as_views_show(p) for p in state.problems}, name
