"""`gitswarm experiment` with `[remote]`: each arm × seed is a coordinated run on its own git
remote (file:// bare repositories the experiment makes), its coordinator's own workers running
the episodes; the runs read, report and resume as local ones do, and the remotes hold the runs
for anyone with the URL. A bad `[remote]` is one message naming the file and the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from conftest import brain_server, git
from test_experiment import KEYS, write_set
from typer.testing import CliRunner

from gitswarm.cli.main import app

runner = CliRunner()


def spec_with(tmp_path: Path, remote: str) -> Path:
    write_set(tmp_path / "set")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'problems = "set"\nseeds = [0]\nbaseline = "single"\n[budget]\nepisodes = 4\n'
                    f'[solve]\nmodel = "scripted-solver"\nworkers = 3\n[scripted]\np = 0.4\n'
                    f'[arms]\nswarm = {{}}\nsingle = {{workers = 1, verify = 0}}\n[remote]\n{remote}\n')
    return spec


def test_arms_run_as_coordinated_runs_on_git_remotes(tmp_path: Path):
    base = tmp_path / "remotes"
    spec = spec_with(tmp_path, f'url = "file://{base}"\nclaim_ttl = 30\npatience = 60')
    out = tmp_path / "exp"
    done = runner.invoke(app, ["experiment", str(spec), "--out", str(out), "--no-tui"])
    assert done.exit_code == 0, done.output
    for run in ("swarm-s0", "single-s0"):
        assert f"{run}: coordinated on file://{base}/{run}.git" in done.output
        remote, mirror = base / f"{run}.git", out / "runs" / run
        assert git(remote, "rev-parse", "main") == git(mirror, "rev-parse", "main")
        assert git(remote, "rev-parse", "refs/gitswarm/stop").strip()
        logged = git(remote, "log", "--format=%(trailers:key=Gitswarm-Op,valueonly)", "main").split()
        assert logged  # the run's reasoning history is on the remote, for anyone with the URL
        assert pygit2.Repository(str(mirror)).references.get("refs/gitswarm/ledger") is not None
    journal = json.loads((out / "experiment.json").read_text())
    urls = {r["name"]: r["url"] for r in journal["runs"]}
    assert urls == {run: f"file://{base}/{run}.git" for run in ("swarm-s0", "single-s0")}
    report = runner.invoke(app, ["experiment", str(spec), "--out", str(out), "--report", "-f", "json"])
    assert report.exit_code == 0, report.output
    assert {a["arm"]: a["finished"] for a in json.loads(report.output)["arms"]} == {"swarm": 1, "single": 1}
    again = runner.invoke(app, ["experiment", str(spec), "--out", str(out), "--no-tui"])
    assert again.exit_code == 0 and "coordinated on" not in again.output  # nothing left to run
    on_main = git(base / "swarm-s0.git", "ls-tree", "--name-only", "main", "problems/").split()
    assert {f"problems/{pid}" for pid in KEYS} <= set(on_main)


@pytest.mark.parametrize("table, said", [
    ('local_workers = 2', "[remote] needs url"),
    ('url = "runs/here"', "is not a git URL"),
    ('url = "file:///x"\nlocal_worker = 2', "did you mean local_workers?"),
    ('url = "file:///x"\npatience = 0', "[remote] patience must be a number of seconds, at least 1"),
    ('url = "file:///x"\nlocal_workers = 1.5', "[remote] local_workers must be a whole number"),
])
def test_a_bad_remote_table_is_named(tmp_path: Path, table: str, said: str):
    done = runner.invoke(app, ["experiment", str(spec_with(tmp_path, table)), "--no-tui"])
    assert done.exit_code == 2 and said in done.output and "spec.toml" in done.output, done.output


@pytest.fixture
def demo_model() -> Iterator[str]:
    yield from brain_server("0.05")


@pytest.mark.e2e
def test_a_worker_follows_the_experiment_from_run_to_run(tmp_path: Path, demo_model: str):
    """The coordinators run no episode of their own (local_workers = 0): one `gitswarm worker
    BASE --experiment` process runs every episode of both runs, joining each as it starts,
    and ends once the experiment says every run is finished."""
    base = tmp_path / "remotes"
    spec = tmp_path / "spec.toml"
    spec.write_text(f'problems = "demo"\nseeds = [0]\nbaseline = "single"\n[budget]\nepisodes = 4\n'
                    f'[solve]\nmodel = "openai/gitswarm-scripted"\napi_base = "{demo_model}"\nworkers = 3\n'
                    f'[arms]\nswarm = {{}}\nsingle = {{workers = 1, verify = 0}}\n'
                    f'[remote]\nurl = "file://{base}"\nlocal_workers = 0\nclaim_ttl = 30\npatience = 300\n')
    env = {**os.environ, "OPENAI_API_KEY": "not-secret"}
    exp = subprocess.Popen([sys.executable, "-m", "gitswarm", "experiment", str(spec), "--out", str(tmp_path / "exp"),
                            "--no-tui"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    follower = subprocess.Popen([sys.executable, "-m", "gitswarm", "worker", f"file://{base}", "--experiment",
                                 "--name", "box", "--workers", "3", "--model", "openai/gitswarm-scripted",
                                 "--api-base", demo_model, "--dir", str(tmp_path / "box"), "--patience", "300",
                                 "--no-tui"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = exp.communicate(timeout=900)
    assert exp.returncode == 0, out + err
    f_out, f_err = follower.communicate(timeout=120)
    assert follower.returncode == 0, f_out + f_err
    assert "every run of the experiment is finished (2 of them joined)" in f_out + f_err
    for run in ("swarm-s0", "single-s0"):
        assert f"joining the experiment's run {run} on file://{base}/{run}.git" in f_err
        book = git(base / f"{run}.git", "for-each-ref", "--format=%(refname)", "refs/gitswarm/workers/box/")
        assert "refs/gitswarm/workers/box/gitswarm/ledger" in book  # its episodes, pushed by the follower
        assert (tmp_path / "box" / run / "HEAD").exists()
    listed = json.loads(git(base / "experiment.git", "show", "refs/gitswarm/experiment:runs.json"))
    assert listed["finished"] and {r["state"] for r in listed["runs"]} == {"finished"}
