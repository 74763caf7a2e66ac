"""Importers: small fixtures written here, plus the real IMO-Bench and MathArena files."""

from __future__ import annotations

import csv
import filecmp
import json
from pathlib import Path

import pytest

from gitswarm.errors import BadInput
from gitswarm.problems.importers import ImportRefused, import_file, safe_id
from gitswarm.problems.loader import check_set
from gitswarm.problems.model import Kind

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ANSWER_HEADER = ["Problem ID", "Problem", "Short Answer", "Category", "Subcategory", "Source"]
PROOF_HEADER = ["Problem ID", "Problem", "Solution", "Grading guidelines", "Category", "Level",
                "Short Answer", "Source"]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    """A well-formed CSV file, quoted the way the IMO-Bench files are."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *rows])
    return path


def answer_row(pid: str, answer: str = "3") -> list[str]:
    problem = f"Find $x$ for {pid},\nwith a comma.\n"
    return [pid, problem, answer, "Algebra", "Inequality", "ISL 2020"]


def proof_row(pid: str, level: str) -> list[str]:
    return [pid, f"Prove {pid}.", "Because.", "(Partial) 1 point", "Geometry", level, "", "Novel"]


def loaded(folder: Path):
    """The problems of an imported folder, asserting the loader finds no defect."""
    problem_set, defects = check_set(folder)
    assert defects == []
    assert problem_set is not None
    return {p.id: p for p in problem_set.problems}


def real(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"benchmark data not present: {path}")
    return path


# --- small fixtures -----------------------------------------------------------------------

def test_answerbench_fixture_imports(tmp_path: Path) -> None:
    rows = [answer_row("AB-1"), answer_row("AB-2", "x=2")]
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER, rows)
    result = import_file("imo-answerbench", source, tmp_path / "out")
    assert [p.name for p in result.written] == ["ab-1.md", "ab-2.md"]
    assert result.skipped == []
    problems = loaded(tmp_path / "out")
    assert problems["ab-2"].answer == "x=2"
    assert problems["ab-1"].kind is Kind.ANSWER
    assert problems["ab-1"].title == "AB-1 (Algebra, Inequality)"
    assert problems["ab-1"].source == "ISL 2020 (IMO-AnswerBench, CC-BY-4.0)"
    assert problems["ab-1"].statement == "Find $x$ for AB-1,\nwith a comma."
    assert 'name = "out"' in (tmp_path / "out" / "set.toml").read_text()


def test_proofbench_fixture_level_filter(tmp_path: Path) -> None:
    rows = [proof_row(pid, level) for pid, level in
            [("PB-1", "IMO-easy"), ("PB-2", "IMO-hard"), ("PB-3", "IMO-easy")]]
    source = write_csv(tmp_path / "pb.csv", PROOF_HEADER, rows)
    result = import_file("imo-proofbench", source, tmp_path / "out", level="imo-EASY")
    assert [p.name for p in result.written] == ["pb-1.md", "pb-3.md"]
    problem = loaded(tmp_path / "out")["pb-1"]
    assert (problem.kind, problem.solution) == (Kind.PROOF, "Because.")
    assert problem.grading == "(Partial) 1 point"
    assert problem.answer is None
    assert problem.title == "PB-1 (Geometry, IMO-easy)"


def test_unknown_level_lists_levels_present(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "pb.csv", PROOF_HEADER, [proof_row("PB-1", "IMO-easy")])
    with pytest.raises(BadInput, match="levels in the file: IMO-easy"):
        import_file("imo-proofbench", source, tmp_path / "out", level="olympic")
    with pytest.raises(BadInput, match="only applies to the imo-proofbench"):
        import_file("imo-answerbench", source, tmp_path / "out", level="IMO-easy")


def test_missing_column_names_missing_and_found(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER[:2], [["A-1", "Find x."]])
    with pytest.raises(BadInput) as info:
        import_file("imo-answerbench", source, tmp_path / "out")
    assert "missing column(s) Short Answer, Category, Subcategory, Source" in str(info.value)
    assert "found: Problem ID, Problem" in str(info.value)


def broken_answerbench(tmp_path: Path) -> Path:
    """Three records; the second lost the closing quote of its Problem, as in the real file."""
    text = ("Problem ID,Problem,Short Answer,Category,Subcategory,Source\n"
            'A-1,"Find x.\n",1,Algebra,Sequence,ISL 2001\n'
            'A-2,"Find all $Y$ such that\n\\[ Y(a)=b \\]\n'
            ',"$Y(x)=x$",Algebra,Functional Equation,Iran\n'
            'A-3,"Find z.",3,Algebra,Sequence,ISL 2003\n')
    (tmp_path / "ab.csv").write_text(text, encoding="utf-8")
    return tmp_path / "ab.csv"


def test_shifted_row_skipped_and_reported(tmp_path: Path) -> None:
    source = broken_answerbench(tmp_path)
    result = import_file("imo-answerbench", source, tmp_path / "out", on_error="skip")
    assert [p.name for p in result.written] == ["a-1.md", "a-3.md"]
    [error] = result.skipped
    assert (error.row, error.problem_id) == (3, "A-2")
    assert "line 4: 5 fields instead of 6" in error.message
    assert "Problem has a line starting with ','" in error.message
    assert loaded(tmp_path / "out")["a-3"].answer == "3"


def test_refuse_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused) as info:
        import_file("imo-answerbench", broken_answerbench(tmp_path), tmp_path / "out")
    assert [(e.row, e.problem_id) for e in info.value.errors] == [(3, "A-2")]
    assert not (tmp_path / "out").exists()


def test_swallowed_record_reported_for_both_ids(tmp_path: Path) -> None:
    # B-1 has no closing quote, so B-2's opening quote closes it: 6 fields, B-2 swallowed.
    text = ("Problem ID,Problem,Short Answer,Category,Subcategory,Source\n"
            'B-1,"Find x.,1,Algebra,Sequence,ISL\n'
            'B-2,"Find y.",2,Algebra,Sequence,ISL\n'
            'B-3,"Find z.",3,Algebra,Sequence,ISL\n')
    (tmp_path / "ab.csv").write_text(text, encoding="utf-8")
    result = import_file("imo-answerbench", tmp_path / "ab.csv", tmp_path / "out", on_error="skip")
    assert [p.name for p in result.written] == ["b-3.md"]
    assert [(e.row, e.problem_id) for e in result.skipped] == [(2, "B-1"), (2, "B-2")]
    assert "start of record(s) B-2" in result.skipped[0].message


def test_fields_shifted_left_with_right_count(tmp_path: Path) -> None:
    shifted = ["C-2", "Find x.", "Algebra", "Functional Equation", "Iran 2002", ""]
    rows = [answer_row("C-1"), shifted]
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER, rows)
    result = import_file("imo-answerbench", source, tmp_path / "out", on_error="skip")
    [error] = result.skipped
    assert error.row == 3
    assert "empty Source" in error.message
    assert "Short Answer 'Algebra' is a Category name" in error.message


def test_empty_answer_and_problem_rejected(tmp_path: Path) -> None:
    rows = [answer_row("D-1", answer=" "), ["D-2", "", "1", "Algebra", "", "Src"],
            ["", "P", "1", "Algebra", "", "S"]]
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER, rows)
    with pytest.raises(ImportRefused) as info:
        import_file("imo-answerbench", source, tmp_path / "out")
    messages = [(e.row, e.problem_id, e.message.split(":")[1].strip()) for e in info.value.errors]
    assert messages == [(2, "D-1", "empty Short Answer"), (3, "D-2", "empty Problem"),
                        (4, None, "empty Problem ID")]


def test_duplicate_id_after_normalising(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER, [answer_row("E 1"), answer_row("e-1")])
    result = import_file("imo-answerbench", source, tmp_path / "out", on_error="skip")
    assert [p.name for p in result.written] == ["e-1.md"]
    assert loaded(tmp_path / "out")["e-1"].title == "E 1 (Algebra, Inequality)"
    [error] = result.skipped
    assert (error.row, error.problem_id) == (3, "e-1")
    assert "already used by row 2" in error.message


def test_safe_id() -> None:
    assert safe_id("PB-Basic-001") == "pb-basic-001"
    assert safe_id("imo-bench-number_theory-006") == "imo-bench-number_theory-006"
    assert safe_id("AIME 2025/I #3") == "aime-2025-i--3"


def test_jsonl_with_bad_line_blank_line_and_int_answer(tmp_path: Path) -> None:
    lines = [json.dumps({"id": "q1", "problem": "What is 6*7?", "answer": 42}), "",
             '{"id": "q2", "problem": "broken', json.dumps({"id": "q3", "problem": "No answer."}),
             json.dumps(["not", "an", "object"]),
             json.dumps({"id": "q5", "problem": "P", "answer": True})]
    (tmp_path / "set.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = import_file("jsonl", tmp_path / "set.jsonl", tmp_path / "out", on_error="skip")
    assert [p.name for p in result.written] == ["q1.md"]
    skipped = [(e.row, e.problem_id) for e in result.skipped]
    assert skipped == [(3, None), (4, "q3"), (5, None), (6, "q5")]
    assert "invalid JSON" in result.skipped[0].message
    assert "missing answer" in result.skipped[1].message
    assert loaded(tmp_path / "out")["q1"].answer == "42"


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    good = b'{"id": "a", "problem": "p", "answer": 1}\n'
    (tmp_path / "set.jsonl").write_bytes(good + b'{"id": "caf\xe9"}\n')
    with pytest.raises(BadInput, match=r"set\.jsonl:2: not UTF-8"):
        import_file("jsonl", tmp_path / "set.jsonl", tmp_path / "out")


def test_existing_file_needs_overwrite(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER, [answer_row("F-1"), answer_row("F-2")])
    out = tmp_path / "out"
    out.mkdir()
    (out / "f-2.md").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match=r"f-2\.md"):
        import_file("imo-answerbench", source, out)
    assert sorted(p.name for p in out.iterdir()) == ["f-2.md"]
    result = import_file("imo-answerbench", source, out, overwrite=True)
    assert len(result.written) == 2
    assert loaded(out)["f-2"].answer == "3"


def test_unknown_format_and_empty_file(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "ab.csv", ANSWER_HEADER, [])
    with pytest.raises(BadInput, match="unknown format"):
        import_file("xlsx", source, tmp_path / "out")
    with pytest.raises(BadInput, match="no records"):
        import_file("imo-answerbench", source, tmp_path / "out")


# --- the real benchmark files (skipped when shared/data is absent) ------------------------

@pytest.mark.needs_data
@pytest.mark.slow
def test_real_proofbench(tmp_path: Path) -> None:
    source = real("imobench", "proofbench_v2.csv")
    assert len(import_file("imo-proofbench", source, tmp_path / "all").written) == 60
    problems = loaded(tmp_path / "all")
    assert all(p.kind is Kind.PROOF and p.solution and p.grading for p in problems.values())
    assert problems["pb-basic-001"].title == "PB-Basic-001 (Algebra, IMO-easy)"
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    hard = {row["Problem ID"].lower() for row in rows if row["Level"] == "IMO-hard"}
    result = import_file("imo-proofbench", source, tmp_path / "hard", level="imo-hard")
    assert {p.stem for p in result.written} == hard
    assert len(hard) == 10
    assert set(loaded(tmp_path / "hard")) == hard


@pytest.mark.needs_data
@pytest.mark.slow
def test_real_answerbench_fixed(tmp_path: Path) -> None:
    source = real("imobench", "answerbench_v2.pr18-fixed.csv")
    assert len(import_file("imo-answerbench", source, tmp_path / "out").written) == 400
    problems = loaded(tmp_path / "out")
    assert problems["imo-bench-algebra-036"].answer == r"$Y(x)=A+\frac{B}{x}-x$"


@pytest.mark.needs_data
@pytest.mark.slow
def test_real_answerbench_broken_row(tmp_path: Path) -> None:
    fixed = real("imobench", "answerbench_v2.pr18-fixed.csv")
    broken = real("imobench", "answerbench_v2.csv")
    with pytest.raises(ImportRefused) as info:
        import_file("imo-answerbench", broken, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    assert [(e.row, e.problem_id) for e in info.value.errors] == [(37, "imo-bench-algebra-036")]
    result = import_file("imo-answerbench", broken, tmp_path / "broken", on_error="skip")
    assert len(result.written) == 399
    assert "line 150: 5 fields instead of 6" in result.skipped[0].message
    import_file("imo-answerbench", fixed, tmp_path / "fixed")
    names = [p.name for p in result.written]
    # Every other record imports exactly as from the fixed file: nothing after the break shifted.
    same, _, _ = filecmp.cmpfiles(tmp_path / "fixed", tmp_path / "broken", names, shallow=False)
    assert same == names
    assert len(loaded(tmp_path / "broken")) == 399


@pytest.mark.needs_data
@pytest.mark.slow
def test_real_matharena_jsonl(tmp_path: Path) -> None:
    source = real("matharena", "aime_2025_I.jsonl")
    assert len(import_file("jsonl", source, tmp_path / "aime").written) == 15
    problem = loaded(tmp_path / "aime")["aime_2025_i-1"]
    assert (problem.answer, problem.kind, problem.source) == ("70", Kind.ANSWER, "aime_2025_I")


def test_figures_not_imported_and_changed_ids_are_said(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gitswarm.cli.main import app

    lines = [{"id": f"AIME-{n}", "problem": f"Problem {n}.", "answer": n, "has_image": n in (2, 10)}
             for n in range(1, 12)]
    lines.append({"id": "plain", "problem": r"See \includegraphics{f.png}.", "answer": 1})
    (tmp_path / "set.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["problems", "import", "jsonl", str(tmp_path / "set.jsonl"),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "ids changed to make file names (lowercased" in result.stdout
    assert "AIME-1 -> aime-1, AIME-2 -> aime-2" in result.stdout and "(and 6 more" in result.stdout
    assert "plain ->" not in result.stdout  # an id kept as given is not listed
    assert "3 problem(s) come with a figure that was not imported: aime-2, aime-10, plain" in result.stderr
    listed = CliRunner().invoke(app, ["problems", "list", str(tmp_path / "out")]).stdout.splitlines()[1:]
    assert [row.split()[0] for row in listed] == [f"aime-{n}" for n in range(1, 12)] + ["plain"]
