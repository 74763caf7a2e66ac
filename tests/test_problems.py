"""Problem files: loading, and every defect reported with file, line and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitswarm.cli.common import Exit, describe
from gitswarm.errors import BadInput
from gitswarm.problems.loader import ProblemSetError, check_set, load_set
from gitswarm.problems.model import Kind


def test_fixture_set_loads_with_typed_hidden_parts(problem_dir: Path):
    problems = {p.id: p for p in load_set(problem_dir).problems}
    assert problems["sum"].kind is Kind.ANSWER and problems["sum"].answer == "HIDDEN-ANSWER-7431"
    assert problems["odd"].grading.startswith("HIDDEN-GRADING-GUIDE")
    assert problems["odd"].title == "Odd squares"
    rev = problems["rev"]
    assert rev.tests_dir == problem_dir / "rev" / "tests" and rev.reference_dir is None
    assert set(rev.visible_files()) == {"statement.md", "starter/solution.py"}
    for problem in problems.values():
        visible = b"".join(problem.visible_files().values()).decode()
        assert "HIDDEN-" not in visible


def test_a_defective_set_is_bad_input_that_names_the_set_and_the_check(tmp_path: Path):
    """Any command that lets it reach the CLI's boundary exits 2 with the set and the fix named."""
    (tmp_path / "a.md").write_text("x")
    with pytest.raises(ProblemSetError) as raised:
        load_set(tmp_path)
    assert isinstance(raised.value, BadInput) and raised.value.defects and raised.value.where == str(tmp_path)
    message, code = describe(raised.value)
    assert code is Exit.BAD_INPUT
    assert str(tmp_path) in message and f"gitswarm problems check {tmp_path}" in message


def one_defect(folder: Path, name: str, content: str | bytes) -> str:
    folder.mkdir(exist_ok=True)
    target = folder / name
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    _, defects = check_set(folder)
    assert len(defects) == 1, defects
    return str(defects[0])


CASES = [
    ("unknown kind", "p.md", "---\nid: p\nkind: essay\n---\nText\n", "p.md:3: unknown kind 'essay'"),
    ("missing kind", "p.md", "---\nid: p\n---\nText\n", "missing 'kind'"),
    ("missing statement", "p.md", "---\nkind: proof\n---\n\n", "p.md:4: missing statement"),
    ("bad yaml", "p.md", "---\nkind: proof\ntitle: [unclosed\n---\nText\n", "p.md:3: invalid YAML"),
    ("no front matter", "p.md", "Just text\n", "p.md:1: the file must start with a '---'"),
    ("unclosed front matter", "p.md", "---\nkind: proof\n", "never closed"),
    ("empty file", "p.md", "", "p.md:1: empty file"),
    ("not utf-8", "p.md", b"---\nkind: proof\n---\ncaf\xe9\n", "p.md:4: not UTF-8"),
    ("unsafe id", "p.md", "---\nid: ../etc\nkind: proof\n---\nText\n", "p.md:2: unsafe id"),
    ("id differs from file", "p.md", "---\nid: q\nkind: proof\n---\nText\n", "differs from the file name"),
    ("answer without key", "p.md", "---\nkind: answer\n---\nText\n", "needs a non-empty 'answer'"),
    ("unknown key", "p.md", "---\nkind: proof\nanwser: 3\n---\nText\n", "p.md:3: unknown key 'anwser'"),
    ("missing test folder", "p.md", "---\nkind: program\n---\nText\n", "missing test folder"),
    ("list value", "p.md", "---\nkind: proof\ntitle: [a, b]\n---\nText\n", "p.md:3: 'title' must be text"),
    ("tests on a proof", "p.md", "---\nkind: proof\ntests: t\n---\nText\n", "only for program problems"),
]


@pytest.mark.parametrize(("case", "name", "content", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_defect_is_reported_with_location(tmp_path: Path, case, name, content, expected):
    assert expected in one_defect(tmp_path / "set", name, content)


def test_duplicate_ids_and_every_defect_at_once(tmp_path: Path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "a.md").write_text("---\nid: a\nkind: proof\n---\nA\n")
    (folder / "b.md").write_text("---\nkind: proof\n---\nB\n")
    (folder / "c.md").write_text("---\nkind: nope\n---\n")
    (folder / "README.md").write_text("not a problem")
    (folder / "set.toml").write_text('name = "s"\ncolour = "blue"\n')
    _, defects = check_set(folder)
    text = "\n".join(map(str, defects))
    assert "unknown kind 'nope'" in text and "missing statement" in text
    assert "unknown key 'colour'" in text
    assert len(defects) == 3
    (folder / "d.md").write_text("---\nid: a\nkind: proof\n---\nD\n")
    assert any("differs from the file name" in str(d) for d in check_set(folder)[1])


def test_duplicate_id_across_files(tmp_path: Path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "a.md").write_text("---\nkind: proof\n---\nA\n")
    (folder / "A.md").write_text("---\nkind: proof\n---\nA\n")
    (folder / "b.md").write_text("---\nid: b\nkind: proof\n---\nB\n")
    problem_set, defects = check_set(folder)
    assert [p.id for p in problem_set.problems] == ["A", "a", "b"] and not defects
    (folder / "b.md").write_text("---\nkind: proof\n---\nB\n")
    (folder / "bb.md").write_text("---\nid: b\nkind: proof\n---\nB\n")
    defects = check_set(folder)[1]
    assert any("id 'b' differs" in str(d) for d in defects)


def test_set_toml_defaults_and_bad_toml(tmp_path: Path, problem_dir: Path):
    (problem_dir / "set.toml").write_text('name = "mini"\ndescription = "d"\n[defaults]\nbudget = 9\n')
    problem_set = load_set(problem_dir)
    assert (problem_set.name, problem_set.defaults) == ("mini", {"budget": 9})
    (problem_dir / "set.toml").write_text('name = "mini\n')
    defects = check_set(problem_dir)[1]
    assert len(defects) == 1 and "set.toml:1: invalid TOML" in str(defects[0])


def test_not_a_folder_and_empty_folder(tmp_path: Path):
    assert "not a folder" in str(check_set(tmp_path / "missing")[1][0])
    (tmp_path / "empty").mkdir()
    assert "no problem files" in str(check_set(tmp_path / "empty")[1][0])


def test_scalars_are_kept_as_written_and_block_text_cannot_close_front_matter(tmp_path: Path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "p.md").write_text("---\nkind: answer\nanswer: 010\ngrading: |\n  a\n  ---\n  ...\n"
                                 "  SECRET\n---\nVisible.\n")
    [problem] = load_set(folder).problems
    assert problem.answer == "010"
    assert "SECRET" in problem.grading and "SECRET" not in problem.statement
