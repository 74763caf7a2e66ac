"""Fail closed: where no backend can make a sandbox's root (simulated with an empty
`GITSWARM_SANDBOX`, the list of backends to try), `solve` and `demo` refuse a set with code
problems at the start, saying what to install; `--unconfined` runs it anyway, and the event
log, `status` and the report name it. A set without code problems runs as before; `sandbox
check` and `doctor`'s check say what this machine gives. The real CLI in subprocesses, the
demo's scripted model behind the fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitswarm.resources import resolve_set

NONE = {"GITSWARM_SANDBOX": ""}


def cli(*args: str, extra: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": "not-secret", **(extra or {})}
    return subprocess.run([sys.executable, "-m", "gitswarm", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=cwd)


def solve(run: Path, api: str, *extra: str, problem: str = "demo-shout", env: dict | None = None):
    return cli("solve", str(resolve_set("demo")), "--run", str(run), "--problem", problem, "--budget", "1",
               "--workers", "1", "--verify", "0", "--model", "openai/gitswarm-scripted", "--api-base", api,
               "--no-tui", *extra, extra=env)


def test_code_problems_are_refused_without_a_sandbox(tmp_path: Path) -> None:
    done = solve(tmp_path / "run", "http://127.0.0.1:9", env=NONE)
    assert done.returncode == 1, done.stderr
    assert "refusing the code problems demo-shout" in done.stderr
    assert "apt-get install bubblewrap" in done.stderr and "--unconfined" in done.stderr
    assert not (tmp_path / "run").exists()  # refused before anything was made
    demo = cli("demo", "--run", str(tmp_path / "demo"), extra=NONE)
    assert demo.returncode == 1 and "refusing the code problems" in demo.stderr


def test_unconfined_is_named_in_the_event_log_status_and_report(tmp_path: Path, model_server: str) -> None:
    run = tmp_path / "run"
    done = solve(run, model_server, "--unconfined", env=NONE)
    assert done.returncode == 0, done.stderr
    starts = [json.loads(line)["data"] for line in (run / "gitswarm-events.jsonl").read_text().splitlines()
              if '"run_started"' in line]
    assert [s["sandbox"] for s in starts] == ["unconfined"]
    status = cli("status", str(run))
    assert status.returncode == 0 and "Programs ran UNCONFINED" in status.stderr
    report = cli("report", str(run), "--output", str(tmp_path / "report.md"))
    assert report.returncode == 0, report.stderr
    assert "Programs ran UNCONFINED" in (tmp_path / "report.md").read_text()


def test_a_run_names_its_sandbox_and_answer_sets_need_none(tmp_path: Path, model_server: str) -> None:
    confined = solve(tmp_path / "confined", model_server)
    assert confined.returncode == 0, confined.stderr
    log = (tmp_path / "confined" / "gitswarm-events.jsonl").read_text()
    assert '"sandbox": "namespaces"' in log or '"sandbox": "bwrap"' in log
    assert "UNCONFINED" not in cli("status", str(tmp_path / "confined")).stderr
    answers = solve(tmp_path / "answers", model_server, problem="demo-odd-sum", env=NONE)
    assert answers.returncode == 0, answers.stderr
    assert '"sandbox": "none"' in (tmp_path / "answers" / "gitswarm-events.jsonl").read_text()


@pytest.mark.parametrize("order", ["", "bwrap", "namespaces"])
def test_sandbox_check_says_what_this_machine_gives(order: str) -> None:
    done = cli("sandbox", "check", "--json", extra={"GITSWARM_SANDBOX": order})
    found = json.loads(done.stdout)
    if not order:
        assert done.returncode == 1 and not found["ok"] and "bubblewrap" in found["fix"]
        return
    if not found["ok"]:
        pytest.skip(f"no {order} sandbox here: {found['refused'][order]}")
    assert done.returncode == 0 and found["backend"] == order and found["gives"]


@pytest.mark.slow  # a coordinator and a worker over a file:// remote: about half a minute
def test_a_worker_without_a_sandbox_claims_no_code_problem(tmp_path: Path, model_server: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed on a worker too: given the references, but on a machine with no sandbox, it
    claims none of the run's code problems, says why and what to install, and starts no episode."""
    from conftest import git
    from test_remote_references import SHOUT, claimed_by, coordinator, events, said, worker

    from gitswarm.remote.daemon import bare

    remote = tmp_path / "run.git"
    bare(remote)
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    url = f"file://{remote}"
    coord = coordinator(url, tmp_path / "mirror", model_server, 1)
    try:
        monkeypatch.setenv("GITSWARM_SANDBOX", "")
        done = worker(url, model_server, "boxless", tmp_path / "boxless", "--references", "demo", "--patience", "5")
    finally:
        coord.kill()
        coord.wait()
    assert done.returncode == 0, done.stderr  # its patience ran out: the run's own end
    words = said(done)
    assert f"this worker runs no code problem ({SHOUT})" in words and "apt-get install bubblewrap" in words
    assert words.count(f"every open problem of the run ({SHOUT}) is a code problem") == 1
    assert "building the reference executables" not in words
    kinds = [e["kind"] for e in events(tmp_path / "boxless")]
    assert "episode_started" not in kinds and kinds.count("skipped_only") == 1
    assert claimed_by(remote, "boxless") == []
