"""`problems import gsm8k` and `problems import jsonl --field ...`, through the real CLI.

The GSM8K sample is written here in GSM8K's layout; the real file is read from shared/data
when present.
"""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.problems.fieldmap import canonical_answer
from gitswarm.problems.importers import import_file
from gitswarm.problems.loader import check_set
from gitswarm.referee.answers import equivalent, extract_answer

runner = CliRunner()
GSM8K_FILE = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k" / "test.jsonl"
SAMPLE = [
    {"question": "A baker fills 4 trays with 6 rolls each and sells all but 5 of them. How many rolls "
                 "does she sell?",
     "answer": "She bakes 4 * 6 = <<4*6=24>>24 rolls.\nShe sells 24 - 5 = <<24-5=19>>19 rolls.\n#### 19"},
    {"question": "A bike costs $400 and a trailer three times as much. What do both cost together?",
     "answer": "The trailer costs 3 * 400 = $<<3*400=1200>>1,200.\nTogether: 400 + 1,200 = "
               "$<<400+1200=1600>>1,600.\n#### 1,600"},
    {"question": "Tom reads 12 pages a day for a week. How many pages does he read?",
     "answer": "He reads 12 * 7 = <<12*7=84>>84 pages.\n#### 84"},
]


def write_jsonl(path: Path, records: list[object], blank_after: int | None = None) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def problems(folder: Path) -> dict:
    """The problems of an imported folder; `gitswarm problems check` must accept it."""
    checked = runner.invoke(app, ["problems", "check", str(folder)])
    assert checked.exit_code == 0, checked.output
    problem_set, defects = check_set(folder)
    assert defects == [] and problem_set is not None
    return {p.id: p for p in problem_set.problems}


def run_import(*args: str | Path) -> object:
    return runner.invoke(app, ["problems", "import", *map(str, args)])


def test_gsm8k_sample_imports_and_grades(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "train.jsonl", SAMPLE)
    result = run_import("gsm8k", source, "--out", tmp_path / "gsm8k")
    assert result.exit_code == 0, result.output
    assert "wrote 3 problems" in result.output
    found = problems(tmp_path / "gsm8k")
    assert sorted(found) == ["gsm8k-0001", "gsm8k-0002", "gsm8k-0003"]
    bike = found["gsm8k-0002"]
    assert bike.answer == "1600"
    assert bike.solution == "The trailer costs 3 * 400 = $1,200.\nTogether: 400 + 1,200 = $1,600."
    assert bike.statement == SAMPLE[1]["question"]
    assert bike.source == "GSM8K, train.jsonl (MIT)"
    assert found["gsm8k-0001"].solution == "She bakes 4 * 6 = 24 rolls.\nShe sells 24 - 5 = 19 rolls."
    for reply in ("The total is \\boxed{1600}.", "Answer: 1,600", "Final answer: 1600"):
        assert equivalent(extract_answer(reply), bike.answer).equal is True
    assert equivalent("1,400", bike.answer).equal is False
    assert equivalent("19", found["gsm8k-0001"].answer).equal is True
    assert equivalent("24", found["gsm8k-0001"].answer).equal is False


def test_ids_are_line_numbers_and_stable_under_limit(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "test.jsonl", SAMPLE, blank_after=1)
    assert run_import("gsm8k", source, "--out", tmp_path / "all").exit_code == 0
    result = run_import("gsm8k", source, "--out", tmp_path / "small", "--limit", "2", "--id-prefix", "all")
    assert result.exit_code == 0, result.output
    # the blank line 2 is not a record: the second record is line 3 in both imports
    assert sorted(problems(tmp_path / "all")) == ["all-0001", "all-0003", "all-0004"]
    names = ["all-0001.md", "all-0003.md"]
    assert sorted(p.name for p in (tmp_path / "small").glob("*.md")) == names
    same, _, _ = filecmp.cmpfiles(tmp_path / "all", tmp_path / "small", names, shallow=False)
    assert same == names
    assert "first 2 records" in (tmp_path / "small" / "set.toml").read_text()


@pytest.mark.needs_data
@pytest.mark.slow
def test_real_gsm8k_first_20(tmp_path: Path) -> None:
    if not GSM8K_FILE.exists():
        pytest.skip(f"GSM8K test file not present at {GSM8K_FILE} (third-party data, not shipped)")
    result = run_import("gsm8k", GSM8K_FILE, "--out", tmp_path / "gsm8k", "--limit", "20")
    assert result.exit_code == 0, result.output
    found = problems(tmp_path / "gsm8k")
    assert sorted(found) == [f"gsm8k-{n:04d}" for n in range(1, 21)]
    first = json.loads(GSM8K_FILE.read_text(encoding="utf-8").splitlines()[0])
    assert found["gsm8k-0001"].statement == first["question"].strip()
    assert found["gsm8k-0001"].answer == first["answer"].rpartition("####")[2].strip()
    for problem in found.values():
        assert problem.answer.lstrip("-").isdigit(), problem.answer
        assert problem.solution and "<<" not in problem.solution and "####" not in problem.solution


def test_mapping_with_nested_fields_and_answer_cut(tmp_path: Path) -> None:
    records = [
        {"uid": "Set A/1", "q": {"text": "Add 2 and 3."}, "out": {"final": "2 + 3 = 5\n=> 5"},
         "meta": {"tags": ["arith", "easy"]}},
        {"uid": "Set A/2", "q": {"text": "What is half of 3?"}, "out": {"final": "=> 3/2"},
         "meta": {"tags": ["fractions"]}},
    ]
    source = write_jsonl(tmp_path / "mine.jsonl", records)
    result = run_import("jsonl", source, "--out", tmp_path / "out", "--field", "id=uid",
                        "--field", "problem=q.text", "--field", "answer=out.final",
                        "--field", "source=meta.tags.0", "--answer-after", "=>")
    assert result.exit_code == 0, result.output
    found = problems(tmp_path / "out")
    assert sorted(found) == ["set-a-1", "set-a-2"]
    first = found["set-a-1"]
    assert (first.title, first.statement, first.answer) == ("Set A/1", "Add 2 and 3.", "5")
    assert (first.solution, first.source) == ("2 + 3 = 5", "arith")
    assert found["set-a-2"].solution is None  # nothing before the marker: no solution
    assert equivalent("1.5", found["set-a-2"].answer).equal is True


def test_mapping_without_ids_numbers_rows(tmp_path: Path) -> None:
    records = [{"prompt": "Count to 3.", "target": 3, "worked": "1, 2, 3"},
               {"prompt": "Halve 1.", "target": 0.5, "worked": None}]
    source = write_jsonl(tmp_path / "x.jsonl", records)
    result = run_import("jsonl", source, "--out", tmp_path / "My Set", "--field", "problem=prompt",
                        "--field", "answer=target", "--field", "solution=worked")
    assert result.exit_code == 0, result.output
    found = problems(tmp_path / "My Set")
    assert (found["my-set-0001"].answer, found["my-set-0001"].solution) == ("3", "1, 2, 3")
    assert (found["my-set-0002"].answer, found["my-set-0002"].solution) == ("0.5", None)


GOOD = {"id": "ok", "q": "Find 1+1.", "a": "work #### 2"}
BAD_RECORDS = {
    "invalid JSON": ('{"id": "b", "q": "x"', "invalid JSON"),
    "not an object": ("[1, 2]", "not a JSON object but a list"),
    "missing problem": ({"id": "b", "a": "#### 1"}, "missing problem ('q')"),
    "empty answer": ({"id": "b", "q": "x", "a": "  "}, "empty answer ('a')"),
    "answer a list": ({"id": "b", "q": "x", "a": ["#### 1"]}, "answer ('a') is a list"),
    "problem null": ({"id": "b", "q": None, "a": "#### 1"}, "problem ('q') is null"),
    "no marker": ({"id": "b", "q": "x", "a": "just 1"}, "has no '####' before its final answer"),
    "nothing after the marker": ({"id": "b", "q": "x", "a": "work ####  "}, "nothing after its last '####'"),
    "missing id": ({"q": "x", "a": "#### 1"}, "missing id"),
    "unsafe id": ({"id": "_b", "q": "x", "a": "#### 1"}, "makes no safe file name"),
    "duplicate id": ({"id": "OK", "q": "x", "a": "#### 1"}, "already used by row 1"),
}


@pytest.mark.parametrize("case", BAD_RECORDS)
def test_malformed_record_reported_with_file_and_row(tmp_path: Path, case: str) -> None:
    bad, message = BAD_RECORDS[case]
    after = GOOD | {"id": "after", "a": "#### 3"}
    source = write_jsonl(tmp_path / "data.jsonl", [GOOD, bad, after])
    mapping = ["--field", "problem=q", "--field", "answer=a", "--answer-after", "####"]
    refused = run_import("jsonl", source, "--out", tmp_path / "refused", *mapping)
    assert refused.exit_code == 2, refused.output
    assert f"{source}: row 2" in refused.output and message in refused.output
    assert not (tmp_path / "refused").exists()
    skipped = run_import("jsonl", source, "--out", tmp_path / "out", "--on-error", "skip", *mapping)
    assert skipped.exit_code == 1, skipped.output
    assert f"{source}: row 2" in skipped.output and "(skipped)" in skipped.output
    found = problems(tmp_path / "out")
    assert (found["ok"].answer, found["after"].answer) == ("2", "3")  # nothing shifted


def test_limit_counts_a_malformed_row_and_ignores_later_ones(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "data.jsonl", [GOOD | {"id": "a"}, "{broken", GOOD | {"id": "c"}, "{x"])
    mapping = ["--field", "problem=q", "--field", "answer=a", "--answer-after", "####"]
    result = run_import("jsonl", source, "--out", tmp_path / "out", "--limit", "3", "--on-error", "skip",
                        *mapping)
    assert result.exit_code == 1 and "row 2" in result.output and "row 4" not in result.output
    assert sorted(problems(tmp_path / "out")) == ["a", "c"]
    assert run_import("jsonl", source, "--out", tmp_path / "one", "--limit", "1", *mapping).exit_code == 0


def test_limit_on_a_csv_format(tmp_path: Path) -> None:
    source = tmp_path / "ab.csv"
    source.write_text("Problem ID,Problem,Short Answer,Category,Subcategory,Source\n"
                      "A-1,Find x.,1,Algebra,,ISL\nA-2,Find y.,2,Algebra,,ISL\n", encoding="utf-8")
    result = import_file("imo-answerbench", source, tmp_path / "out", limit=1)
    assert [p.name for p in result.written] == ["a-1.md"]


@pytest.mark.parametrize(("args", "message"), [
    (["jsonl", "{src}", "--field", "question"], "bad field mapping 'question'"),
    (["jsonl", "{src}", "--field", "query=q"], "TARGET one of id, problem, answer"),
    (["jsonl", "{src}", "--field", "answer=out..final"], "bad field mapping 'answer=out..final'"),
    (["jsonl", "{src}", "--field", "answer=a", "--field", "answer=b"], "'answer' is mapped twice"),
    (["jsonl", "{src}", "--answer-after", " "], "needs a marker"),
    (["imo-answerbench", "{src}", "--field", "problem=q"], "for the jsonl and gsm8k formats only"),
    (["jsonl", "{src}", "--limit", "0"], "--limit"),
    (["programbench", "{src}", "--limit", "2"], "a programbench task is one problem"),
    (["jsonl", "{src}", "--field", "problem=q", "--field", "answer=a", "--id-prefix", "_x"],
     "id prefix '_x' makes no safe file name"),
])
def test_bad_options_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    source = write_jsonl(tmp_path / "data.jsonl", [{"q": "x", "a": 1}])
    result = run_import(*[a.format(src=source) for a in args], "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_help_names_the_new_options() -> None:
    result = runner.invoke(app, ["problems", "import", "--help"])
    assert result.exit_code == 0
    for word in ("gsm8k", "--field", "TARGET=PATH", "dotted", "--answer-after", "--id-prefix", "--limit",
                 "Exit 0", "2 on bad input"):
        assert word in " ".join(result.output.split()), word


def test_canonical_answer() -> None:
    assert canonical_answer(" 1,200 ") == "1200"
    assert canonical_answer("-1,234,567.5") == "-1234567.5"
    for kept in ("1,2", "12,345,67", "(1,200)", "x = 1,200", "1200"):
        assert canonical_answer(kept) == kept.strip()
