"""Equal tokens (`tokens = "smallest"`): every arm runs its episodes (pass 1), then each arm that
spent more than its seed's cheapest runs again under a cap of that spend (pass 2). Run by the
real engine against the scripted solver behind the fake server, killed in the middle of pass 2
as a real subprocess of the CLI and resumed; the report checked against `status --json`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from test_experiment import THIRD, events, largest_call, run_in_dashboard, runner, status, write_spec

from gitswarm.cli.main import app
from gitswarm.experiment.budget import Budget, equal_spend
from gitswarm.experiment.figures import RunFigures

ARMS = f"swarm = {{}}\nsingle = {{workers = 1, verify = 0}}\n{THIRD}"
WORKERS = {"swarm": 3, "single": 1, THIRD.split()[0]: 3}


def figures(arm: str, tokens: int, state: str = "finished", reason: str = "budget") -> RunFigures:
    return RunFigures(arm, 0, f"runs/{arm}-s0", state, reason, "", 4, tokens, None, 1.0, {})


def test_t_is_the_cheapest_arms_spend_once_every_arm_finished_pass_1():
    fair = equal_spend(0, [figures("swarm", 900), figures("single", 400), figures("other", 400)])
    assert (fair.tokens, fair.smallest, fair.again) == (400, "single", ("swarm",))  # a tie needs no second run
    assert equal_spend(0, [figures("swarm", 900), figures("single", 400, "interrupted", None)]) is None
    assert equal_spend(0, [figures("swarm", 900), figures("single", 40, reason="provider_failing")]) is None
    said = Budget(episodes=4, smallest=True).describe()
    assert "4 episodes" in said and "cheapest arm" in said and "at most one call per worker" in said


@pytest.mark.parametrize(("budget", "said"), [
    ('tokens = "smallest"', ['[budget] tokens = "smallest" needs episodes = N']),
    ('episodes = 4\ntokens = "biggest"', ['[budget] must hold exactly one of', 'tokens must be "smallest"',
                                          "not 'biggest'"]),
    ('tokens = "biggest"', ['[budget] tokens must be a positive whole number or "smallest"', "not 'biggest'"]),
    ('episodes = 4\ntokens = 0', ['tokens must be "smallest", not 0']),
])
def test_a_bad_equal_tokens_budget_is_one_message_naming_the_file_and_key(tmp_path: Path, budget: str,
                                                                           said: list[str]):
    spec = write_spec(tmp_path, budget, "swarm = {}\nsingle = {}")
    result = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"gitswarm: {spec}: [budget]") and "Traceback" not in result.output
    for part in said:
        assert part in result.output
    assert not (tmp_path / "x").exists()


def stopped(run: Path) -> bool:
    return any(e["kind"] == "run_stopped" for e in events(run))


def wait_for_a_second_pass_run(runs: Path, process: subprocess.Popen, limit_s: float = 180) -> None:
    deadline = time.monotonic() + limit_s
    while not any(stopped(run) for run in runs.glob("*-at-*")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no equal-spend run finished in time"
        time.sleep(0.05)


@pytest.mark.slow  # 30-60 s on two shared cores
def test_equal_tokens_killed_in_pass_2_and_resumed(tmp_path: Path):
    spec = write_spec(tmp_path, 'episodes = 4\ntokens = "smallest"', ARMS)
    out = tmp_path / "exp"
    runs = out / "runs"
    command = [sys.executable, "-m", "gitswarm", "experiment", str(spec), "--no-tui", "--out", str(out)]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=os.environ | {"PYTHONUNBUFFERED": "1"})
    wait_for_a_second_pass_run(runs, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = sorted(run.name for run in runs.iterdir() if stopped(run))
    ledgers = {name: git(runs / name, "rev-parse", "refs/gitswarm/ledger") for name in finished}

    result = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(out), "--parallel", "2"])
    assert result.exit_code == 0, result.output
    for name in finished:  # not repeated: neither started again nor charged more
        assert sum(e["kind"] == "run_started" for e in events(runs / name)) == 1
        assert git(runs / name, "rev-parse", "refs/gitswarm/ledger") == ledgers[name]
    assert "(not run again)" in result.output

    spent = {(arm, seed): status(runs / f"{arm}-s{seed}")["tokens"] for arm in WORKERS for seed in (0, 1)}
    journal = json.loads((out / "experiment.json").read_text())
    again = set()
    for seed in (0, 1):
        cap = min(spent[(arm, seed)] for arm in WORKERS)
        fair = journal["equal_spend"][seed]
        assert fair["tokens"] == cap and spent[(fair["smallest"], seed)] == cap
        again |= {f"{arm}-s{seed}-at-{cap}" for arm in WORKERS if spent[(arm, seed)] > cap}
        assert fair["standing"] == {arm: f"{arm}-s{seed}-at-{cap}" if spent[(arm, seed)] > cap else f"{arm}-s{seed}"
                                    for arm in WORKERS}
    assert {run.name for run in runs.glob("*-at-*")} == again and again  # exactly the arms above T
    assert any(name in again for name in finished) and not again <= set(finished)  # killed in the middle of pass 2
    assert all(r["state"] == "finished" for r in journal["runs"]) and len(journal["runs"]) == 6 + len(again)

    data = json.loads(runner.invoke(app, ["experiment", str(spec), "--out", str(out), "--report", "-f",
                                          "json"]).output)
    assert {r["name"] for r in data["runs"]} == {f"{a}-s{s}" for a, s in spent} | again  # pass 1 listed too
    for run in data["runs"]:
        totals = status(Path(run["path"]))
        assert (run["tokens"], run["episodes"], run["cost_usd"]) == (
            totals["tokens"], totals["episodes"], totals["cost_usd"])
        fair = journal["equal_spend"][run["seed"]]
        assert run["stands"] == (run["name"] in fair["standing"].values())
        assert run["pass"] == (2 if run["name"] in again else 1)
        if run["stands"]:  # within one call per worker (and the merger's) of T; the episode budget the bound
            largest = largest_call(Path(run["path"]))
            assert run["tokens"] <= fair["tokens"] + (WORKERS[run["arm"]] + 1) * largest, (run, fair, largest)
            assert run["episodes"] <= 4 and run["reason"] in ("budget", "episode_cap", "token_cap")
        if run["pass"] == 2:
            assert run["tokens"] >= fair["tokens"] or run["reason"] in ("budget", "episode_cap")
    standing = [r for r in data["runs"] if r["stands"]]
    assert len(standing) == 6
    for arm in data["arms"]:
        assert arm["tokens"] == sum(r["tokens"] for r in standing if r["arm"] == arm["arm"])
        assert arm["finished"] == arm["runs"] == 2
    assert data["spent"]["tokens"] == sum(r["tokens"] for r in data["runs"])
    assert all(c["pairs"] == 4 for c in data["comparisons"])
    markdown = runner.invoke(app, ["experiment", str(spec), "--out", str(out), "--report"]).output
    for seed in (0, 1):
        fair = journal["equal_spend"][seed]
        assert f"Seed {seed}: T = {fair['tokens']} tokens, the spend of {fair['smallest']}'s pass-1 run" in markdown
    assert f"{data['spent']['tokens']} tokens" in markdown

    moved = sorted(again)[0]  # as if pass 1 of its seed had been made again and given another T
    cap = int(moved.rsplit("-at-", 1)[1])
    (runs / moved).rename(runs / moved.replace(f"-at-{cap}", f"-at-{cap + 1}"))
    refused = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(out)])
    assert refused.exit_code == 2, refused.output
    assert f"now gives T = {cap} tokens" in refused.output and "ran under another T" in refused.output


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_dashboard_runs_the_equal_spend_runs_as_their_seed_makes_them_ready(tmp_path: Path,
                                                                                     anyio_backend: str):
    from gitswarm.cli.experiment import runner_for
    from gitswarm.experiment.spec import load_spec

    spec = load_spec(write_spec(tmp_path, 'episodes = 4\ntokens = "smallest"',
                                "swarm = {}\nsingle = {workers = 1, verify = 0}", seeds="[0]"), tmp_path / "exp")
    experiment = runner_for(spec, 1, None)
    experiment.say = lambda line: None
    todo, ran, made = experiment.prepare(), [], []
    while todo:  # as `gitswarm experiment` runs them one dashboard after another
        plan = todo.pop(0)
        app = await run_in_dashboard(experiment, plan)
        assert app.error is None
        ran.append(plan.name)
        followers = experiment.after(plan)
        made.append([p.name for p in followers])
        todo += followers
    fair = experiment.fair[0]
    assert made[:2] == [[], [f"{arm}-s0-at-{fair.tokens}" for arm in fair.again]]  # once the seed's pass 1 ended
    assert ran == ["swarm-s0", "single-s0", *made[1]] and experiment.after(spec.runs[1]) == []  # made once
    assert all(s.finished for s in experiment.statuses().values()) and len(experiment.statuses()) == 2 + len(made[1])


@pytest.mark.slow  # two small experiments, ~20 s
def test_a_grade_lock_left_by_a_killed_experiment_does_not_stop_its_resume(tmp_path: Path):
    """Killed while it wrote a run's grade, an experiment leaves `refs/gitswarm/grades.lock`
    behind, which libgit2 never takes: the resume grades the run under its lock, removing what
    the dead process left, as `solve` does."""
    spec = write_spec(tmp_path, "episodes = 2", "single = {workers = 1, verify = 0}", seeds="[0]")
    out = tmp_path / "exp"
    first = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(out)])
    assert first.exit_code == 0, first.output
    [run] = list((out / "runs").iterdir())
    git(run, "update-ref", "-d", "refs/gitswarm/grades")  # killed before its grade was written...
    stale = run / "refs" / "gitswarm" / "grades.lock"  # ...while libgit2 held the grades ref's lock
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("")
    again = runner.invoke(app, ["experiment", str(spec), "--no-tui", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert "(not run again)" in again.output and "left ungraded" not in again.output
    assert not stale.exists() and git(run, "rev-parse", "refs/gitswarm/grades").strip()
