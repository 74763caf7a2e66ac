"""The example specs in experiments/ run as they are: both load as specs, answers.toml is the
docs' example word for word, and the offline one runs through the CLI (`gitswarm experiment`)
to a report comparing its four arms."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gitswarm.experiment.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "experiments"
ARMS = ["swarm", "verify0", "single", "independent"]


@pytest.mark.parametrize("name", ["scripted.toml", "answers.toml"])
def test_each_example_spec_loads(name: str, tmp_path: Path):
    spec = load_spec(SPECS / name, tmp_path / "out")
    assert list(spec.arms) == ARMS


def test_answers_toml_is_the_docs_example():
    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(# experiments/answers.toml\n.*?)```", page, flags=re.S)[1]
    assert (SPECS / "answers.toml").read_text(encoding="utf-8") == example


@pytest.mark.e2e  # 8 runs of 12 episodes: half a minute on 2 shared cores
def test_the_offline_example_runs_through_the_cli(tmp_path: Path):
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    spec = SPECS / "scripted.toml"

    def gitswarm(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gitswarm", *args], cwd=tmp_path, env=environ, text=True,
                              capture_output=True, timeout=600)

    ran = gitswarm("experiment", str(spec), "--no-tui", "--out", "out")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "Every run finished" in ran.stdout and "Traceback" not in ran.stderr
    report = json.loads(gitswarm("experiment", str(spec), "--out", "out", "--report", "-f", "json").stdout)
    assert [arm["arm"] for arm in report["arms"]] == ARMS
    assert sorted(r["name"] for r in report["runs"]) == sorted(f"{a}-s{s}" for a in ARMS for s in (0, 1))
    assert all(r["episodes"] == 12 and r["reason"] == "budget" for r in report["runs"])
    problems = {"ans-dice-range", "ans-divisor-shift", "ans-heron-area"}
    assert all(set(r["scores"]) == problems for r in report["runs"])
    assert [c["arm"] for c in report["comparisons"]] == ARMS[:3]
    assert all(c["pairs"] == 6 for c in report["comparisons"])
    markdown = gitswarm("experiment", str(spec), "--out", "out", "--report").stdout
    assert "never evidence about real models" in markdown and "## Against the baseline (independent)" in markdown
