"""`gitswarm report` on a demo run: figures checked against values computed here from `git`."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.main import app

runner = CliRunner()
KINDS = {"note", "lemma", "attempt", "review", "code"}
FIELDS = "%H%x1f%P%x1f%(trailers:key=Gitswarm-Problem,valueonly)%x1f%(trailers:key=Gitswarm-Kind,valueonly)" \
         "%x1f%(trailers:key=Gitswarm-Informed-By,valueonly,separator=%x2C)" \
         "%x1f%(trailers:key=Gitswarm-Reviews,valueonly)%x1f%(trailers:key=Gitswarm-Verdict,valueonly)%x1e"


def test_the_figures_count_the_kinds_their_definitions_name() -> None:
    from gitswarm.report.graph import COUNTED_KINDS

    assert COUNTED_KINDS == KINDS  # derived from domain.kinds: a kind added there is counted only on purpose


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


def commits(run: Path) -> dict[str, dict]:
    """Every commit on main and the unmerged branches, with its parents, trailers and citations."""
    found = {}
    for record in git(run, "log", "--branches", f"--format={FIELDS}").split("\x1e"):
        if not record.strip():
            continue
        sha, parents, problem, kind, cited, reviews, verdict = (f.strip() for f in record.strip("\n").split("\x1f"))
        found[sha] = {"parents": parents.split(), "problem": problem, "kind": kind, "reviews": reviews,
                      "verdict": verdict, "cited": [c.strip() for c in cited.replace(",", " ").split() if c.strip()]}
    return found


def ancestors(run: Path, start: str) -> set[str]:
    return set(git(run, "rev-list", start).split())


def expected(run: Path, problem: str, candidate: str) -> tuple[int, int, int, int]:
    """(contributions, built on, in ancestry, citing) by the definitions in gitswarm/report/graph.py:
    citations alone, and the winner's ancestry with the pass reviews that verified it."""
    every = commits(run)
    mine = {c for c, v in every.items() if v["problem"] == problem and v["kind"] in KINDS}
    used = {c for d in mine for c in every[d]["cited"] if c in mine and c != d}
    citing = {d for d in mine if set(every[d]["cited"]) & (mine - {d})}
    reach, todo = set(), {candidate}
    while todo:
        reach |= todo
        todo = {x for c in todo for x in every.get(c, {}).get("cited", [])} - reach
    reach |= {d for d in mine if every[d]["kind"] == "review" and every[d]["reviews"] == candidate
              and every[d]["verdict"] == "pass"}
    return len(mine), len(used), len(reach & mine), len(citing)


def test_json_figures_match_git(run: Path):
    result = runner.invoke(app, ["report", str(run), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["problems"]) == 5 and data["charged"] <= 60  # the demo set's budget
    totals = [0, 0, 0, 0]
    for p in data["problems"]:
        solution = git(run, "show", f"main:problems/{p['id']}/SOLUTION.md")
        assert f"candidate: {p['selected']}" in solution
        assert f"nominations: {p['nominations'].get(p['selected'], 0)}\n" in solution
        want = expected(run, p["id"], p["selected"])
        assert (p["contributions"], p["built_on"], p["in_ancestry"], p["citing"]) == want, p["id"]
        assert p["built_on_share"] == round(want[1] / want[0], 4)
        totals = [t + w for t, w in zip(totals, want, strict=True)]
    assert data["contributions"] == totals[0] and data["built_on_share"] == round(totals[1] / totals[0], 4)
    assert data["ancestry_share"] == round(totals[2] / totals[0], 4)
    assert data["citation_rate"] == round(totals[3] / totals[0], 4)
    assert data["tokens"] > 0 and data["episodes"] >= data["charged"]
    usage = data["usage"]  # every call's, the merger's too: the headline total is theirs
    assert usage["tokens_in"] + usage["tokens_out"] == data["tokens"] and usage["calls"] > 0
    assert data["problem_tokens"] == sum(p["tokens"] for p in data["problems"])
    assert data["merger_tokens"] > 0 and data["problem_tokens"] + data["merger_tokens"] == data["tokens"]
    assert set(usage) == {"tokens_in", "cache_read", "cache_write", "reasoning", "tokens_out", "calls",
                          "failed_calls", "estimated_tokens"}


def test_totals_are_the_ones_status_gives(run: Path):
    status = runner.invoke(app, ["status", str(run), "--json"])
    report = runner.invoke(app, ["report", str(run), "--format", "json"])
    assert status.exit_code == 0 and report.exit_code == 0, status.output + report.output
    totals, data = json.loads(status.output)["totals"], json.loads(report.output)
    assert (data["tokens"], data["episodes"], data["charged"], data["cost_usd"]) == \
        (totals["tokens"], totals["episodes"], totals["charged"], totals["cost_usd"])
    assert {k: totals[k] for k in data["usage"]} == data["usage"]
    markdown = runner.invoke(app, ["report", str(run)]).output
    first = markdown.split("\n\n")[1]  # the summary paragraph: its headline total is status's
    assert f"{totals['tokens']:,} tokens (the ledger's total" in first
    assert f"the merger {data['merger_tokens']:,}" in first


def test_names_model_budget_workers_and_rule(run: Path):
    data = json.loads(runner.invoke(app, ["report", str(run), "--format", "json"]).output)
    settings = data["settings"]  # the session's demo run: workers=4, budget=60, the default rule
    assert (settings["model"], settings["budget"], settings["workers"]) == ("openai/gitswarm-scripted", 60, 4)
    assert (settings["verify"], settings["settle_nominations"], settings["starts"]) == (2, 3, 1)
    markdown = runner.invoke(app, ["report", str(run)]).output
    assert "Model openai/gitswarm-scripted; budget 60 episodes" in markdown and "workers 4" in markdown
    assert "(verify K = 2); 3 nominations of one candidate settle a problem" in markdown


def test_markdown_and_html(run: Path, tmp_path: Path):
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0 and "| demo-odd-sum |" in result.output and "**Built on**" in result.output
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(run), "-f", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.count("<svg") == 5 and "<script" not in page and "http://cdn" not in page
    assert "demo-reverse-words: contribution graph" in page


def test_html_without_the_report_extra_is_written_without_drawings(run: Path, tmp_path: Path):
    out = tmp_path / "report.html"
    code = ("import sys; sys.modules['matplotlib'] = None; from gitswarm.cli.main import app; "
            f"app(['report', {str(run)!r}, '-f', 'html', '-o', {str(out)!r}], prog_name='gitswarm')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    warned = done.stderr.strip().splitlines()
    assert len(warned) == 1 and "pip install 'gitswarm[report]'" in warned[0] and "matplotlib" in warned[0]
    page = html.unescape(out.read_text())
    assert "<svg" not in page and "pip install 'gitswarm[report]'" in page
    assert "demo-odd-sum: review trail of the selected candidate" in page and "critical" in page


def test_report_of_a_folder_that_is_not_a_run(tmp_path: Path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a gitswarm run" in result.output
