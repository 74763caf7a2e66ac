"""The `reproduce` problem kind: what the loader accepts, shows and hides, and every defect."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_fixture import BRANCH, TESTS_JSON, reproduce_set, write

from gitswarm.problems.loader import check_set
from gitswarm.problems.model import Kind
from gitswarm.problems.suite import canonical, read_suite, without_trailing_commas


def defects_of(folder: Path) -> list[str]:
    return [str(d) for d in check_set(folder)[1]]


def test_a_reproduce_problem_loads_with_its_parts(tmp_path: Path) -> None:
    problem_set, defects = check_set(reproduce_set(tmp_path))
    assert defects == []
    problem = problem_set.problems[0]
    assert problem.kind is Kind.REPRODUCE and problem.executable == "calculator"
    assert problem.build == "cc -O2 -o calculator calc.c"
    visible = problem.visible_files()
    assert sorted(visible) == ["docs/README.md", "statement.md"]
    assert "- executable: `calculator`" in visible["statement.md"].decode()
    hidden = problem.hidden_texts()
    assert any('"33128f6b8600"' in t for t in hidden), "tests.json is hidden"
    assert any("def test_addition" in t for t in hidden), "the test code is hidden"
    assert any("#include <stdio.h>" in t for t in hidden), "the reference source is hidden"
    assert "cc -O2 -o calculator calc.c" in hidden
    assert not any(h in v.decode() for h in hidden for v in visible.values() if len(h) > 20)


def test_a_binary_reference_without_build_is_accepted_but_not_a_hidden_text(tmp_path: Path) -> None:
    folder = reproduce_set(tmp_path)
    text = (folder / "calc.md").read_text().replace("build: cc -O2 -o calculator calc.c\n", "")
    (folder / "calc.md").write_text(text)
    assert any("no " in d and "calculator" in d for d in defects_of(folder))
    write(folder, {"calc/reference/calculator": b"\x7fELF\x00\xff binary"})
    problem_set, defects = check_set(folder)
    assert defects == []
    assert all("ELF" not in t for t in problem_set.problems[0].hidden_texts())


@pytest.mark.parametrize(("change", "words"), [
    (lambda f: (f / "calc.md").write_text((f / "calc.md").read_text().replace("executable: calculator\n", "")),
     ["calc.md", "needs 'executable'"]),
    (lambda f: (f / "calc.md").write_text((f / "calc.md").read_text().replace("calculator\n", "../x\n", 1)),
     ["calc.md:5", "plain file name"]),
    (lambda f: (f / "calc/tests/tests.json").unlink(), ["tests.json", "missing tests.json"]),
    (lambda f: (f / "calc/tests/tests.json").write_text('{"branches": {"b1": {"tests": [1,\n2]}}}'),
     ["tests.json:1", "list of test names"]),
    (lambda f: (f / "calc/tests/tests.json").write_text('{\n  "branches": {\n    "x": {"tests": [}\n'),
     ["tests.json:3", "invalid JSON"]),
    (lambda f: (f / "calc/tests/tests.json").write_text(TESTS_JSON.replace(BRANCH, "abcdef012345")),
     ["tests.json:3", "'abcdef012345'", "holds no test_*.py"]),
    (lambda f: (f / "calc.md").write_text((f / "calc.md").read_text().replace(
        "build:", "eval_clean_hashes: [nothex]\nbuild:")), ["calc.md:6", "sha256"]),
    (lambda f: (f / "calc.md").write_text((f / "calc.md").read_text().replace("build:", "docs: nowhere\nbuild:")),
     ["calc.md:6", "missing docs folder"]),
    (lambda f: (f / "calc.md").write_text((f / "calc.md").read_text().replace("build:", "starter: s\nbuild:")),
     ["calc.md:6", "'starter' is only for program problems"]),
])
def test_each_defect_of_a_reproduce_problem_has_its_file_and_line(tmp_path: Path, change, words) -> None:
    folder = reproduce_set(tmp_path)
    change(folder)
    found = defects_of(folder)
    assert any(all(w in d for w in words) for d in found), found


def test_reproduce_keys_on_other_kinds_are_defects(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "---\nid: a\nkind: proof\nexecutable: jq\ndocs: d\n---\nProve it.\n"})
    found = defects_of(tmp_path)
    assert any("a.md:4" in d and "only for reproduce" in d for d in found)
    assert any("a.md:5" in d and "only for reproduce" in d for d in found)


def test_trailing_commas_are_dropped_outside_strings_only() -> None:
    text = '{"a": [1, 2,\n], "b": "x,]", "c": {"d": 1,},\n}'
    assert without_trailing_commas(text).count("\n") == text.count("\n")
    import json
    assert json.loads(without_trailing_commas(text)) == {"a": [1, 2], "b": "x,]", "c": {"d": 1}}


def test_suite_counts_and_names(tmp_path: Path) -> None:
    path = write(tmp_path, {"tests.json": '{"branches": {"b": {"tests": ["eval.tests.t.a", "tests.t.b", "c"],'
                            '"ignored_tests": [{"name": "c", "reasons": [{"id": "gold_fail"}]}]},'
                            '"i": {"ignored": true, "tests": ["x"], "ignored_tests": []},}}'}) / "tests.json"
    suite = read_suite(path)
    assert [b.counted() for b in suite.branches] == [["eval.tests.t.a", "tests.t.b"], []]
    assert suite.total == 2
    assert canonical("eval.tests.t.a") == canonical("tests.t.a") == "tests.t.a"


def test_control_characters_are_refused_with_their_line(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "---\nid: a\nkind: proof\n---\nProve\tit.\n\nNow \x1b[31mred\n"})
    assert defects_of(tmp_path) == [f"{tmp_path / 'a.md'}:7: control character U+001B (escape) at "
                                    "column 5: a problem file holds text only (tabs and newlines "
                                    "allowed); remove it"]


def test_windows_line_endings_are_still_text(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "---\r\nid: a\r\nkind: proof\r\n---\r\nProve it.\r\n"})
    assert defects_of(tmp_path) == []
    write(tmp_path, {"a.md": "---\nid: a\nkind: proof\n---\nProve\rit.\n"})
    assert any("a.md:5" in d and "U+000D" in d for d in defects_of(tmp_path))
