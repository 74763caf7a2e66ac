"""The read model (`gitswarm.readmodel`) on real run repositories: each state, the candidates,
the grade rule; and `status`, the report and the dashboard agreeing on a finished demo run."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain import selection
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.grade import Grade
from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.rule import SETTLE_NOMINATIONS, Rule
from gitswarm.engine.selection import select
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.read import read_run, rule_of, shown_grade
from gitswarm.referee.grades import GradeStore

runner = CliRunner()
PACKAGE = Path(__file__).resolve().parents[1] / "gitswarm"


def contribute(memory: Memory, episode: str, kind: str, files: dict[str, str], worker: str = "w01",
               **record: str) -> str:
    """One contribution to `sum`, composed into main; returns its commit."""
    written = memory.contribute(Contribution(
        problem="sum", episode=episode, worker=worker, kind=kind, title=f"{kind} of {episode}", files=files,
        parent=memory.main(), op=f"{episode}-final", **record))
    memory.compose()
    return written.commit


def nominate(memory: Memory, episode: str, candidate: str, path: str = "attempts/a.md") -> None:
    contribute(memory, episode, "nomination", {f"nominations/{episode}.md":
                                               f"---\ncandidate: {candidate}\npath: {path}\n---\n\nbest\n"},
               candidate=candidate)


def review(memory: Memory, episode: str, worker: str, candidate: str, verdict: str) -> str:
    """A review as the contribute tool writes it: front matter naming its episode, trailers."""
    head = f"---\nreviews: {candidate}\npath: attempts/a.md\nverdict: {verdict}\nepisode: {episode}\n---\n\n"
    return contribute(memory, episode, "review", {f"reviews/{episode}.md": head + "checked"}, worker,
                      reviews=candidate, verdict=verdict)


def grade(candidate: str, score: float | None, when: int, model: str | None = None,
          path: str = "problems/sum/attempts/a.md") -> Grade:
    return Grade("sum", candidate, path, "answer", model, score, 1.0, {"method": "test"}, [], when)


def test_a_problem_moves_through_every_state(memory: Memory):
    def state() -> str:
        return read_run(memory).problem("sum").state

    assert state() == "open"
    contribute(memory, "e1", "note", {"notes/n.md": "a note"})
    assert state() == "in progress"
    attempt = contribute(memory, "e2", "attempt", {"attempts/a.md": "Answer: 7"})
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "candidate" and sum_.counts.as_dict() == {
        "notes": 1, "lemmas": 0, "attempts": 1, "reviews": 0, "code": 0}
    assert [(c.path, c.commit) for c in sum_.candidates] == [("problems/sum/attempts/a.md", attempt)]
    nominate(memory, "e3", attempt)
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "nominated" and sum_.leading == attempt and sum_.nominations == {attempt: 1}
    assert [(c.path, c.commit, c.nominations) for c in sum_.candidates] == [
        ("problems/sum/attempts/a.md", attempt, 1)]  # the tree's entry is this candidate, not another
    for n in range(4, 3 + SETTLE_NOMINATIONS):
        nominate(memory, f"e{n}", attempt)
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "nominated" and sum_.verification == "unverified"  # votes alone do not settle
    review(memory, "e10", "w02", attempt, "pass")
    review(memory, "e11", "w01", attempt, "pass")  # its author's: shown in the trail, not counted
    assert state() == "nominated"
    review(memory, "e12", "w03", attempt, "pass")
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "settled" and sum_.verification == "verified" and sum_.candidates[0].verified
    assert [(r.worker, r.verdict, r.counted) for r in sum_.standing.trail] == [
        ("w02", "pass", True), ("w01", "pass", False), ("w03", "pass", True)]
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    chosen = select(memory, index, "sum", Rule())  # the engine's own selection
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "selected" and sum_.selected_path == chosen.path and chosen.verified
    assert sum_.selected.candidate == chosen.candidate == sum_.leading
    assert sum_.selected.nominations == SETTLE_NOMINATIONS and sum_.selected.verified


def test_set_aside_when_the_ledger_lists_it(memory: Memory):
    assert read_run(memory).problem("odd").state == "open"
    memory.put_records("ledger", {"scheduler.json": {"next_number": 1, "set_aside": ["odd"]}}, "ledger: test")
    run = read_run(memory)
    assert run.problem("odd").state == "set aside" and run.problem("sum").state == "open"


def test_leading_candidate_is_what_selection_chooses(memory: Memory):
    first = contribute(memory, "e1", "attempt", {"attempts/a.md": "Answer: 7"})
    second = contribute(memory, "e2", "attempt", {"attempts/b.md": "Answer: 8"})
    nominate(memory, "e3", first)
    nominate(memory, "e4", second, "attempts/b.md")
    GradeStore(memory).put(grade(max(first, second), 1.0, 10, path="problems/sum/attempts/x.md"))
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    want = selection.leader(index, "sum", Rule(), GradeStore(memory).scores("sum"))
    assert read_run(memory).problem("sum").leading == want.commit == max(first, second)  # the referee's tie-break
    assert not want.verified  # nothing reviewed: the plurality leader, unverified


def test_the_grade_rule(memory: Memory):
    attempt = contribute(memory, "e1", "attempt", {"attempts/a.md": "Answer: 7"})
    other = contribute(memory, "e2", "attempt", {"attempts/b.md": "Answer: 8"})
    nominate(memory, "e3", attempt)
    store = GradeStore(memory)
    store.put(grade(attempt, None, 100))  # undecided, the newest
    assert read_run(memory).problem("sum").grade_text == "undecided"  # nothing better: shown as it is
    store.put(grade(attempt, 1.0, 50, model="judge-a"))
    assert read_run(memory).problem("sum").grade.model == "judge-a"  # a score beats a newer undecided
    store.put(grade(attempt, 0.0, 200, model="judge-b"))
    store.put(grade(other, 1.0, 300, path="problems/sum/attempts/b.md"))
    sum_ = read_run(memory).problem("sum")
    assert sum_.grade.model == "judge-b" and sum_.grade_text == "0/1"  # newest with a score, of the leader
    assert {c.path: c.grade.score for c in sum_.candidates} == {"problems/sum/attempts/a.md": 0.0,
                                                                "problems/sum/attempts/b.md": 1.0}
    for commit, score in store.scores("sum").items():  # the score selection's tie-break reads
        shown = shown_grade(store.for_candidate("sum", commit))
        assert shown.score / shown.max == score
    assert shown_grade([]) is None


def test_the_rule_of_a_run_without_a_record_is_the_engines_default():
    """A run whose ledger has no selection record yet (or a broken one) reads with the rule a
    run started with the default settings selects by."""
    from gitswarm.engine.config import SolveConfig

    default = (SolveConfig.model_fields["verify"].default, SolveConfig.model_fields["settle_nominations"].default)
    assert rule_of({}) == rule_of({"selection": "broken"}) == default
    assert rule_of({"selection": {"verify": 0, "settle_nominations": 5}}) == (0, 5)


def test_the_dashboard_imports_nothing_from_the_cli():
    done = subprocess.run([sys.executable, "-c", "import sys, gitswarm.tui.app\n"
                           "print([m for m in sys.modules if m.startswith('gitswarm.cli')])"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    for path in [*(PACKAGE / "tui").glob("*.py"), *(PACKAGE / "readmodel").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):  # function-level imports too
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.startswith("gitswarm.cli") for n in names), f"{path.name} imports {names}"


@pytest.fixture
def graded_run(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the session's finished demo run, graded: one answer by `gitswarm grade`, the
    proof by two stored judgments (the newer one could not grade)."""
    run = tmp_path / "run"
    shutil.copytree(demo_run(tmp_path_factory), run, symlinks=True)
    graded = runner.invoke(app, ["grade", str(run), "--problem", "demo-divisors-36"])
    assert graded.exit_code == 0, graded.output
    store = GradeStore(Memory(run))
    candidate = read_run(Memory(run)).problem("demo-odd-sum").selected
    now = int(time.time())
    for model, score, when in (("judge-a", 6.0, now - 60), ("judge-b", None, now)):
        store.put(Grade("demo-odd-sum", candidate.candidate, candidate.path, "proof-judge", model, score, 7.0,
                        {"points": [6, 6, 7] if score else []}, [], when))
    return run


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_status_report_and_dashboard_agree_on_every_problem(graded_run: Path):
    from gitswarm.tui.app import Dashboard

    shown = runner.invoke(app, ["status", str(graded_run), "--json"])
    assert shown.exit_code == 0, shown.output
    status = {p["id"]: p for p in json.loads(shown.output)["problems"]}
    reported = runner.invoke(app, ["report", str(graded_run), "-f", "json"])
    assert reported.exit_code == 0, reported.output
    report = {p["id"]: p for p in json.loads(reported.output)["problems"]}
    dashboard = Dashboard(graded_run)
    async with dashboard.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 20
        while not (dashboard.state.header.stopped and
                   dashboard.state.problems["demo-odd-sum"].grade.startswith("6/7")):
            assert time.monotonic() < deadline, "the dashboard never read the run"
            await pilot.pause(0.1)
        rows = dict(dashboard.state.problems)
        cells = {key.value: dashboard.query_one("ProblemsTable").get_row(key) for key in
                 dashboard.query_one("ProblemsTable").rows}
        await pilot.press("q")
    assert set(status) == set(report) == set(rows) == set(cells) and len(status) == 5
    for pid, s in status.items():
        r, row = report[pid], rows[pid]
        votes = git(graded_run, "ls-tree", "-r", "--name-only", "main", f"problems/{pid}/nominations/").count("\n")
        assert s["state"] == r["state"] == row.state == "selected", pid
        assert s["selected"] == r["selected_path"] == row.selected, pid
        assert f"candidate: {s['selected_commit']}" in git(graded_run, "show", f"main:problems/{pid}/SOLUTION.md")
        assert s["nominations"] == sum(r["nominations"].values()) == row.nominations == votes, pid
        assert r["nominations"] == {c["commit"]: c["nominations"] for c in s["candidates"] if c["nominations"]}
        assert s["candidates"] == r["candidates"], pid
        assert (s["grade"] or "-") == r["grade"] == row.grade, pid
        assert s["counts"] == r["counts"] == row.counts.as_dict(), pid
        assert (s["kind"], row.lemmas, row.attempts) == (r["kind"], s["counts"]["lemmas"],
                                                         s["counts"]["attempts"] + s["counts"]["code"])
        assert s["verification"] == r["verification"] == row.verification == "verified", pid
        assert cells[pid][2:] == [row.state, row.contributions, row.lemmas, row.attempts, row.nominations,
                                  row.verification, row.grade]
    assert status["demo-divisors-36"]["grade"] == "1/1"
    assert status["demo-odd-sum"]["grade"] == "6/7 (judges 6,6,7)"  # not the newer ungraded judgment
    assert all(status[p]["grade"] is None for p in ("demo-hexagon-angles", "demo-reverse-words"))


def test_grade_without_a_referee_shows_the_stored_proof_grade_and_its_judge(graded_run: Path):
    shown = runner.invoke(app, ["grade", str(graded_run), "--problem", "demo-odd-sum"])
    assert shown.exit_code == 0, shown.output
    assert "proof-judge (judge-a)" in shown.output and "6/7" in shown.output and "stored earlier" in shown.output
    again = runner.invoke(app, ["grade", str(graded_run), "--problem", "demo-odd-sum", "--force"])
    assert again.exit_code == 2 and "needs a referee model" in again.output  # grading anew needs one


def test_the_demo_judge_knows_only_the_scripts_texts():
    from gitswarm.demo.judge import judge
    from gitswarm.demo.script import script

    def fenced(proof: str) -> str:
        return f"# Candidate proof\n\n===== BEGIN CANDIDATE PROOF =====\n{proof}\n===== END CANDIDATE PROOF =====\n"

    odd = script()["demo-odd-sum"]
    assert judge(fenced(odd["attempt"])).endswith("<points>7</points>")
    assert judge(fenced(odd["flawed"])).endswith("<points>0</points>")
    assert "<points>" not in judge(fenced("A proof the script never wrote."))


def test_the_counts_are_the_memorys_item_folders():
    from dataclasses import fields

    from gitswarm.readmodel.model import FOLDERS, Counts

    assert tuple(f.name for f in fields(Counts)) == FOLDERS
