"""The report tells the demo's story: every candidate's reviews (the critical one included),
the revision that answers it, grades of the scripted judge labelled as such, readable graphs.
Facts are checked against the run's own commits, read with `git`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import git
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.demo import grade_demo
from gitswarm.cli.main import app
from gitswarm.demo.judge import JUDGE_MODEL
from gitswarm.problems.loader import load_set
from gitswarm.resources import resolve_set

runner = CliRunner()
PROBLEM = "demo-odd-sum"  # the demo's flawed first try, its critical review and the revision


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def reviews_in_git(run: Path) -> dict[str, tuple[str, str]]:
    """Each review commit of PROBLEM on main and unmerged branches: (the candidate it reviews, its verdict)."""
    fmt = "%H %(trailers:key=Gitswarm-Reviews,valueonly,separator=) %(trailers:key=Gitswarm-Verdict,valueonly)"
    found = {}
    for line in git(run, "log", "--branches", f"--grep=^Gitswarm-Problem: {PROBLEM}$", "--grep=^Gitswarm-Kind: review$",
                    "--all-match", f"--format={fmt}").splitlines():
        if not line.strip():
            continue
        sha, candidate, verdict = line.split()
        found[sha] = (candidate, verdict)
    return found


def story(run: Path) -> list[dict]:
    data = json.loads(runner.invoke(app, ["report", str(run), "-f", "json"]).output)
    return next(p for p in data["problems"] if p["id"] == PROBLEM)["story"]


def test_every_candidate_has_its_reviews_and_the_revision_answers_the_critical_one(run: Path):
    reviews = reviews_in_git(run)
    critical = [sha for sha, (_, verdict) in reviews.items() if verdict == "critical"]
    # the demo's script: a critical review of the flawed first try, or two when both of its
    # reviewers ran at once (K = 2 reviews are asked for together)
    assert len(critical) in (1, 2) and len({reviews[c][0] for c in critical}) == 1
    told = {c["commit"]: c for c in story(run)}
    flawed = told[reviews[critical[0]][0]]
    assert flawed["outcome"] == "rejected" and flawed["nominations"] == 0
    assert sorted((r["commit"], r["verdict"]) for r in flawed["reviews"]) == sorted((c, "critical") for c in critical)
    for commit, c in told.items():  # every review git has, under the candidate it names
        assert {r["commit"] for r in c["reviews"]} == {s for s, (of, _) in reviews.items() if of == commit}
    revisions = [c for c in told.values() if c["answers"]]  # two workers may revise it at once
    assert [r["outcome"] for r in revisions].count("selected") == 1, revisions
    for revision in revisions:
        assert revision["revises"] == [flawed["path"]]
        answered = [a["commit"] for a in revision["answers"]]
        assert answered and set(answered) <= set(critical)
        assert all((a["verdict"], a["of"]) == ("critical", flawed["path"]) for a in revision["answers"])
        cited = git(run, "log", "-1", "--format=%(trailers:key=Gitswarm-Informed-By,valueonly)", revision["commit"])
        assert all(c in cited for c in answered) and flawed["commit"] in cited


def test_markdown_and_html_show_the_critical_review_and_the_chain(run: Path, tmp_path: Path):
    told = {c["outcome"]: c for c in story(run)}
    flawed, revision = Path(told["rejected"]["path"]).name, Path(told["selected"]["path"]).name
    markdown = runner.invoke(app, ["report", str(run)]).output
    section = markdown.split(f"## {PROBLEM}: review trail of the selected candidate problems/{PROBLEM}/attempts/"
                             f"{revision} (verified) and of every other candidate")[1].split("\n## ")[0]
    assert re.search(rf"### attempts/{flawed}: rejected\n\nWritten by w\d+", section)
    assert "| **critical** |" in section
    assert re.search(rf"Revision chain: attempts/{flawed} \(rejected; reviews: critical e\d+(, critical e\d+)?\) → "
                     rf"attempts/{revision} \(selected; reviews: pass", section)
    assert f"revises attempts/{flawed}, answering the critical review" in section
    out = tmp_path / "report.html"
    assert runner.invoke(app, ["report", str(run), "-f", "html", "-o", str(out)]).exit_code == 0
    page = out.read_text()
    assert f"<h3 class='rejected'>attempts/{flawed}: rejected</h3>" in page
    assert "<td class='verdict-critical'>critical</td>" in page and "Revision chain: " in page


def test_graph_names_kinds_in_full_with_a_legend_of_those_present(run: Path, tmp_path: Path):
    out = tmp_path / "report.html"
    assert runner.invoke(app, ["report", str(run), "-f", "html", "-o", str(out)]).exit_code == 0
    drawing = out.read_text().split(f"{PROBLEM}: contribution graph</h2>")[1].split("</svg>")[0]
    texts = re.findall(r"<text[^>]*>([^<]+)</text>", drawing)
    assert {"note", "attempt", "review", "critical", "pass", "kind"} <= set(texts)
    assert "code" not in texts and "lemma" not in texts  # the legend shows the kinds present only
    assert not {"not", "att", "rev"} & set(texts)
    sizes = {float(s) for s in re.findall(r"font-size: ([\d.]+)px", drawing)}
    assert sizes and min(sizes) >= 10


def test_scripted_grades_say_so(run: Path, tmp_path: Path):
    graded = tmp_path / "graded"
    shutil.copytree(run, graded)  # the session's run stays ungraded for the other tests
    assert grade_demo(graded, load_set(resolve_set("demo"))) == 0
    data = json.loads(runner.invoke(app, ["report", str(graded), "-f", "json"]).output)
    by_id = {p["id"]: p for p in data["problems"]}
    proof = by_id[PROBLEM]
    assert proof["grade"].startswith("7/7") and proof["grade_scripted"] and JUDGE_MODEL in proof["graded_by"]
    answer = by_id["demo-divisors-36"]  # the answer key's grade is a real one
    assert (answer["grade"], answer["grade_scripted"], answer["graded_by"]) == ("1/1", False, "answer")
    status = json.loads(runner.invoke(app, ["status", str(graded), "--json"]).output)
    assert {p["id"]: p["grade"] for p in status["problems"]} == {p: r["grade"] for p, r in by_id.items()}
    markdown = runner.invoke(app, ["report", str(graded)]).output
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {PROBLEM} |"))
    assert "7/7 (judges 7,7,7), by the demo's scripted judge, no real referee" in row
    assert "scripted" not in next(line for line in markdown.splitlines() if line.startswith("| demo-divisors-36 |"))
