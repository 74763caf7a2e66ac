"""The read model (`gitswarm.readmodel`) on real run repositories: each state, the candidates,
the grade rule; and that the dashboard imports nothing from the CLI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from gitswarm.engine import selection
from gitswarm.engine.index import MemoryIndex
from gitswarm.memory.model import Contribution
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.read import SETTLE_NOMINATIONS, read_run, shown_grade
from gitswarm.referee.grades import Grade, GradeStore

PACKAGE = Path(__file__).resolve().parents[1] / "gitswarm"


def contribute(memory: Memory, episode: str, kind: str, files: dict[str, str], **trailers: str) -> str:
    """One contribution to `sum`, composed into main; returns its commit."""
    written = memory.contribute(Contribution(
        problem="sum", episode=episode, worker="w01", kind=kind, title=f"{kind} of {episode}", files=files,
        parent=memory.main(), op=f"{episode}-final", trailers=trailers))
    memory.compose()
    return written.commit


def nominate(memory: Memory, episode: str, candidate: str, path: str = "attempts/a.md") -> None:
    contribute(memory, episode, "nomination", {f"nominations/{episode}.md":
                                               f"---\ncandidate: {candidate}\npath: {path}\n---\n\nbest\n"},
               Candidate=candidate)


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
    assert [(c.path, c.commit) for c in sum_.candidates] == [("problems/sum/attempts/a.md", None)]
    nominate(memory, "e3", attempt)
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "nominated" and sum_.leading == attempt and sum_.nominations == {attempt: 1}
    assert [(c.path, c.commit, c.nominations) for c in sum_.candidates] == [
        ("problems/sum/attempts/a.md", attempt, 1)]  # the tree's entry is this candidate, not another
    for n in range(4, 3 + SETTLE_NOMINATIONS):
        nominate(memory, f"e{n}", attempt)
    assert state() == "settled"
    index = MemoryIndex()
    index.update(memory.repo, memory.main())
    chosen = selection.select(memory, index, "sum")  # the engine's own selection
    sum_ = read_run(memory).problem("sum")
    assert sum_.state == "selected" and sum_.selected_path == chosen.path
    assert sum_.selected.candidate == chosen.candidate == sum_.leading
    assert sum_.selected.nominations == SETTLE_NOMINATIONS


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
    index.update(memory.repo, memory.main())
    want, _ = selection.choose(index, "sum", GradeStore(memory).scores("sum"))
    assert read_run(memory).problem("sum").leading == want == max(first, second)  # the referee's tie-break


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


def test_settle_threshold_is_the_engines_default():
    from gitswarm.engine.config import SolveConfig

    assert SolveConfig.model_fields["settle_nominations"].default == SETTLE_NOMINATIONS


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
