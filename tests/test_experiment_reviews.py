"""The experiment that compares who reviews, and the swarm against best-of-n: the shipped
experiments/reviews.toml run whole by the CLI on the scripted solver (each arm runs, paired per
problem and seed, the selector's quality reported per arm), and the comparison per problem kind
on a set of two kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git
from typer.testing import CliRunner

from gitswarm.cli.main import app

runner = CliRunner()
SPEC = Path(__file__).resolve().parents[1] / "experiments" / "reviews.toml"


def report(spec: Path, out: Path) -> dict:
    ran = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    shown = runner.invoke(app, ["experiment", str(spec), "--out", str(out), "--report", "-f", "json"])
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)


@pytest.mark.slow
def test_the_reviews_experiment_runs_every_arm_paired_and_measures_its_selector(tmp_path: Path):
    data = report(SPEC, tmp_path / "exp")
    arms = {a["arm"]: a for a in data["arms"]}
    assert set(arms) == {"best-of-n", "swarm", "blind", "in-row"} and data["baseline"] == "best-of-n"
    assert all(a["finished"] == a["runs"] == 2 for a in arms.values())
    assert {c["arm"]: c["pairs"] for c in data["comparisons"]} == {"swarm": 6, "blind": 6, "in-row": 6}
    for arm in arms.values():
        selector = arm["selector"]
        assert selector["graded"] == selector["candidates"] > 0  # every answer candidate graded
        assert selector["selected"] == 6 and selector["picked_best"] <= 6 and selector["reviewer"]
    assert any("scripted solver" in note and "never evidence" in note for note in data["notes"])
    for run in data["runs"]:
        log = git(Path(run["path"]), "log", "--format=%s", "main")
        lines = (Path(run["path"]) / "gitswarm-events.jsonl").read_text().splitlines()
        started = next(json.loads(line) for line in lines if '"run_started"' in line)["data"]
        if run["arm"] == "best-of-n":
            assert "nominat" not in log.replace("nomination(s)", "") and started["isolation"] == "best-of-n"
        if run["arm"] in ("blind", "in-row"):
            assert started["reviews"] == "blind"
    markdown = runner.invoke(app, ["experiment", str(SPEC), "--out", str(tmp_path / "exp"), "--report"]).output
    assert "## Selection and reviews against the referee" in markdown


def test_the_comparison_is_made_within_each_problem_kind_too(tmp_path: Path):
    spec = tmp_path / "kinds.toml"
    spec.write_text('problems = "demo"\nseeds = [0]\nbaseline = "best-of-n"\n[budget]\nepisodes = 8\n'
                    '[solve]\nmodel = "scripted-solver"\nworkers = 3\n'
                    'problem_ids = ["demo-divisors-36", "demo-reverse-words"]\n'
                    '[arms]\nbest-of-n = {isolation = "best-of-n"}\nswarm = {}\n')
    data = report(spec, tmp_path / "exp")
    assert sorted((c["arm"], c["kind"], c["pairs"]) for c in data["by_kind"]) == [
        ("swarm", "answer", 1), ("swarm", "program", 1)]  # one problem of each kind, one seed
    markdown = runner.invoke(app, ["experiment", str(spec), "--out", str(tmp_path / "exp"), "--report"]).output
    assert "The same comparison within each problem kind:" in markdown
