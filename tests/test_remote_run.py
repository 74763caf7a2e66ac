"""A run on a git remote through the real CLI: one coordinator (`gitswarm solve SET --run URL
--workers 0`) and three `gitswarm worker` processes, the demo's scripted model behind one fake
server process, over a `file://` bare repository and a real `git daemon` on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from conftest import MODEL_LATENCY_S, brain_server, fsck_clean, git
from remote_fixture import git_commands, pushed_refs

from gitswarm.demo import audit
from gitswarm.engine.ledger import Ledger
from gitswarm.memory.repo import Memory
from gitswarm.remote import layout
from gitswarm.remote.daemon import bare
from gitswarm.remote.pace import POLL_S, Pace
from gitswarm.resources import resolve_set
from gitswarm.tui.app import Dashboard
from gitswarm.tui.tables import ProcessesTable

BUDGET = 24
CAP = 60_000
"""A token cap well below what the demo set's run spends with the budget above."""
IN_FLIGHT = 6
"""Calls that may be in flight when the cap is reached: three workers of two slots."""


def server_repo(path: Path) -> Path:
    """A bare repository as the README says to make one: HEAD on main, so `git clone` checks it out."""
    bare(path)
    git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    return path


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitswarm", *args]


def env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "not-secret"}


def coordinator(url: str, mirror: Path, api: str, *extra: str, trace: Path | None = None) -> subprocess.Popen:
    """A coordinator process; with `trace`, git's own trace of its commands goes there."""
    traced = {"GIT_TRACE2_EVENT": str(trace)} if trace else {}
    return subprocess.Popen(cli("solve", str(resolve_set("demo")), "--run", url, "--mirror", str(mirror),
                                "--workers", "0", "--budget", str(BUDGET), "--model", "openai/gitswarm-scripted",
                                "--api-base", api, "--claim-ttl", "4", "--no-tui", *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**env(), **traced})


def worker(url: str, folder: Path, name: str, api: str, watch: bool = False, slots: int = 2,
           trace: Path | None = None, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """A worker process; with `watch`, its JSON events can be read from its stdout (read them:
    a full pipe would block it); with `trace`, git's own trace of its commands goes there."""
    traced = {"GIT_TRACE2_EVENT": str(trace)} if trace else {}
    return subprocess.Popen(cli("worker", url, "--name", name, "--workers", str(slots), "--model",
                                "openai/gitswarm-scripted", "--api-base", api, "--dir", str(folder),
                                "--patience", "60", "--json", *extra),
                            stdout=subprocess.PIPE if watch else subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**env(), **traced})


def finish(process: subprocess.Popen, timeout: float = 180) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def run_ops(mirror: Path) -> Counter:
    """How often each Gitswarm-Op appears in the run's own history: every ref but the workers'
    (which hold whatever a worker pushed, refused commits too; an adopted one is the same
    commit on main, so it counts once either way)."""
    text = git(mirror, "log", f"--exclude={layout.WORKERS}*", "--all",
               "--format=%(trailers:key=Gitswarm-Op,valueonly)")
    return Counter(text.split())


def check_pruned(mirror: Path, remote: Path) -> None:
    """The end of a run that prunes: no claim and no worker's per-episode ref left on the
    remote, only each worker's ledger book and notes; every number up to the high-water mark
    an episode of the run's ledger, so none was skipped or handed out twice."""
    assert git(remote, "for-each-ref", layout.CLAIMS) == ""
    kept = {ref.split("/", 4)[4] for ref in git(remote, "for-each-ref", "--format=%(refname)",
                                                 layout.WORKERS).split()}
    assert kept <= {"gitswarm/ledger", "notes/transcripts", "gitswarm/conversations"}, kept
    [mark] = git(remote, "for-each-ref", "--format=%(refname:lstrip=3)", layout.HIGH_WATER).split()
    episodes = {e for e in Ledger.load(Memory(mirror)).episodes if e != "merger"}
    assert episodes == {f"e{n:05d}" for n in range(1, int(mark[1:]) + 1)}
    assert any(json.loads(line)["kind"] == "pruned" for line in (mirror / "gitswarm-events.jsonl").open())


def check_run(mirror: Path, remote: Path) -> None:
    """The invariants of a finished remote run, read with plain git."""
    assert audit.charged(mirror) <= BUDGET
    ops = run_ops(mirror)
    assert sum(n - 1 for n in ops.values()) == 0, ops.most_common(3)
    assert fsck_clean(mirror) and fsck_clean(remote)
    assert git(mirror, "branch", "--list", "swarm/*").strip() == ""  # every adopted branch merged
    adopted = git(mirror, "for-each-ref", "--format=%(objectname)", "refs/gitswarm/ops/").split()
    for commit in adopted:  # every contribution reachable from main, on the remote too
        git(remote, "merge-base", "--is-ancestor", commit, "main")
    assert git(remote, "rev-parse", "main") == git(mirror, "rev-parse", "main")
    assert git(remote, "rev-parse", "refs/gitswarm/stop").strip()


@pytest.mark.e2e  # five processes; a coordinator process and a worker end to end: test_worker_tui.py
@pytest.mark.e2e
def test_a_worker_runs_its_blind_reviews_on_its_own_reviewer_model(tmp_path: Path, model_server: str):
    remote = server_repo(tmp_path / "run.git")
    url = f"file://{remote}"
    coord = coordinator(url, tmp_path / "mirror", model_server, "--reviews", "blind")
    served = brain_server(MODEL_LATENCY_S)  # the reviewer model's own server
    try:
        reviewer_api = next(served)
        # --references: the demo's reproduce problem is this worker's too, so the run settles every problem
        # (a fair scheduler spends fewer than the budget on the others, so the budget no longer ends it)
        one = worker(url, tmp_path / "a", "a", model_server, slots=3,
                     extra=("--reviewer-model", "openai/gitswarm-reviewer", "--reviewer-api-base", reviewer_api,
                            "--references", "demo"))
        code, _, err = finish(coord)
        assert code == 0, err
        assert finish(one)[0] == 0
    finally:
        served.close()
    check_run(tmp_path / "mirror", remote)
    records = [r for key, r in Ledger.load(Memory(tmp_path / "mirror")).episodes.items() if key != "merger"]
    reviews = [r for r in records if r.reviews]
    assert reviews and all(r.model == "openai/gitswarm-reviewer" for r in reviews)
    assert all(r.model == "openai/gitswarm-scripted" for r in records if not r.reviews)
    started = [json.loads(line)["data"] for line in (tmp_path / "mirror" / "gitswarm-events.jsonl").open()
               if '"run_started"' in line]
    assert started[-1]["reviews"] == "blind"


def test_a_coordinator_and_three_workers_over_file_url(tmp_path: Path, model_server: str):
    remote = server_repo(tmp_path / "run.git")
    url = f"file://{remote}"
    coord = coordinator(url, tmp_path / "mirror", model_server)
    time.sleep(1.5)  # the workers may also start first: they wait for the run's settings
    workers = [worker(url, tmp_path / name, name, model_server) for name in ("a", "b", "c")]
    code, _, err = finish(coord)
    assert code == 0, err
    for w in workers:
        assert finish(w)[0] == 0
    check_run(tmp_path / "mirror", remote)
    check_pruned(tmp_path / "mirror", remote)
    mirror = tmp_path / "mirror"
    clone = tmp_path / "clone"  # anyone with the URL reads the whole reasoning history with plain git
    subprocess.run(["git", "clone", "-q", url, str(clone)], check=True)
    git(clone, "fetch", "-q", "origin", "refs/notes/*:refs/notes/*")
    adopted = git(mirror, "for-each-ref", "--format=%(objectname)", "refs/gitswarm/ops/").split()
    logged = git(clone, "log", "--format=%H", "main").split()
    assert adopted and set(adopted) <= set(logged)
    assert (clone / "problems" / "demo-odd-sum" / "statement.md").exists()
    noted = git(clone, "notes", "--ref=transcripts", "list").split()
    assert set(adopted) & set(noted[1::2])  # transcripts come with the notes ref
    status = subprocess.run(cli("status", str(mirror)), capture_output=True, text=True, env=env())
    assert status.returncode == 0, status.stderr
    assert "WORKER               STATE    HELD EPISODES" in status.stdout
    for name in ("a", "b", "c"):
        assert f"\n{name} " in status.stdout
    shown = json.loads(subprocess.run(cli("status", str(mirror), "--json"), capture_output=True, text=True,
                                      env=env(), check=True).stdout)
    processes = {w["name"]: w for w in shown["workers"]}
    assert set(processes) == {"a", "b", "c"}
    assert all(w["state"] == "exited" and w["held"] == 0 and w["last_push"] > 0 for w in processes.values())
    assert sum(w["episodes"] for w in processes.values()) == shown["totals"]["episodes"]
    assert sum(w["tokens"] for w in processes.values()) <= shown["totals"]["tokens_in"] + shown["totals"]["tokens_out"]
    report = subprocess.run(cli("report", str(mirror), "-f", "md"), capture_output=True, text=True,
                            env=env(), check=True).stdout
    assert "## Worker processes" in report and all(f"| {name} | exited |" in report for name in "abc")
    anyio.run(dashboard_shows_processes, mirror)
    # from anywhere, by the URL alone: the same state, read from a temporary copy of the remote
    remotely = json.loads(subprocess.run(cli("status", url, "--json"), capture_output=True, text=True,
                                         env=env(), check=True).stdout)
    assert remotely == shown
    copied = json.loads(subprocess.run(cli("report", url, "-f", "json"), capture_output=True, text=True,
                                       env=env(), check=True).stdout)
    assert copied["path"] == url and copied["episodes"] == shown["totals"]["episodes"]
    own = subprocess.run(cli("status", str(tmp_path / "a")), capture_output=True, text=True, env=env())
    assert own.returncode == 0 and "is a worker's folder" in own.stderr  # not the run's state: says so


async def dashboard_shows_processes(mirror: Path) -> None:
    """The dashboard on the coordinator's mirror lists the worker processes as status does."""
    app = Dashboard(mirror)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessesTable)
        deadline = time.monotonic() + 20
        while table.row_count < 3:
            assert time.monotonic() < deadline, "the dashboard did not show the worker processes"
            await pilot.pause(0.1)
        assert table.display and {str(k.value) for k in table.rows} == {"a", "b", "c"}
        await pilot.press("q")


@pytest.fixture
def slow_model_server() -> Iterator[str]:
    """The scripted model at 1.5 s a call: closer to a real provider's seconds per call than
    the usual 0.1 s, so the spending a report takes to reach the other workers (a push, the
    coordinator's step and publish, their fetch: a second or two on a busy machine) is a few
    calls, as with a real provider it is a fraction of one. At 0.5 s a call, a CI machine
    running the slow tests two at a time once took the run 3.5 calls a slot past its cap."""
    yield from brain_server("1.5")


@pytest.mark.slow
def test_the_token_cap_holds_across_worker_processes(tmp_path: Path, slow_model_server: str):
    """Three workers, none of which spends the cap alone: the run stops at the cap of all
    their calls together, reported while their episodes run, not at three times it. It may
    pass it by the calls in flight when it is reached (as a local run may) and by those made
    while the last reports travel."""
    model_server = slow_model_server
    remote = server_repo(tmp_path / "run.git")
    url, cap = f"file://{remote}", CAP
    coord = coordinator(url, tmp_path / "mirror", model_server, "--max-total-tokens", str(cap))
    workers = [worker(url, tmp_path / name, name, model_server) for name in ("a", "b", "c")]
    code, out, err = finish(coord)
    assert code == 0, err
    assert f"token cap of {cap} reached" in out + err
    for w in workers:
        assert finish(w)[0] == 0
    check_run(tmp_path / "mirror", remote)
    totals = Ledger.summary(Memory(tmp_path / "mirror"))
    per_call = totals.tokens / max(totals.calls, 1)
    print(f"spent {totals.tokens} tokens in {totals.calls} calls ({per_call:.0f} per call), cap {cap}")
    assert cap <= totals.tokens <= cap + 3 * IN_FLIGHT * per_call
    books = {p: Ledger.load(Memory(tmp_path / p)).episodes.values() for p in ("a", "b", "c")}
    assert max(sum(r.tokens_in + r.tokens_out for r in book) for book in books.values()) < cap
    cut = [r for book in books.values() for r in book if r.status == "stopped" and "token cap" in r.note]
    assert cut  # a worker stopped its own episode at the cap, which only the others' spending reached


@pytest.mark.e2e
def test_a_worker_claims_its_free_slots_in_one_push(tmp_path: Path, model_server: str):
    """Each episode is a claim, but a worker claims every slot it has free in one push: its
    first push creates one claim per slot, and in all it pushes less than twice per episode
    (a claim push and a result push each)."""
    remote = server_repo(tmp_path / "run.git")
    url = f"file://{remote}"
    coord = coordinator(url, tmp_path / "mirror", model_server)
    one = worker(url, tmp_path / "solo", "solo", model_server, slots=6, trace=tmp_path / "trace")
    code, _, err = finish(coord)
    assert code == 0, err
    assert finish(one)[0] == 0
    check_run(tmp_path / "mirror", remote)
    pushes = pushed_refs(tmp_path / "trace")
    assert pushes[0] == [*(f"refs/gitswarm/claims/e{n:05d}" for n in range(1, 7)), f"{layout.HIGH_WATER}e00006"]
    episodes = Ledger.load(Memory(tmp_path / "mirror")).totals.episodes
    assert episodes >= BUDGET and len(pushes) < 2 * episodes


def test_status_by_url_of_a_remote_with_no_run(tmp_path: Path):
    """A bare repository with no run yet, and no repository at all: each said, with what to do."""
    empty = f"file://{server_repo(tmp_path / 'empty.git')}"
    done = subprocess.run(cli("status", empty), capture_output=True, text=True, env=env())
    assert done.returncode == 2 and "holds no gitswarm run yet" in done.stderr and "--run " + empty in done.stderr
    missing = subprocess.run(cli("status", f"file://{tmp_path}/none.git"), capture_output=True, text=True, env=env())
    assert missing.returncode == 2 and "no git repository at" in missing.stderr, missing.stderr  # a wrong URL
    worker = subprocess.run(cli("worker", f"file://{tmp_path}/none.git", "--model", "openai/x", "--api-base",
                                "http://127.0.0.1:9/v1", "--no-tui"), capture_output=True, text=True, env=env())
    assert worker.returncode == 2 and "no git repository at" in worker.stderr, worker.stderr
    assert "Traceback" not in done.stderr + missing.stderr


@pytest.mark.e2e
def test_an_idle_coordinator_looks_less_often_and_stops_after_its_patience(tmp_path: Path, model_server: str):
    """No worker ever joins: each look (a fetch of the claims) finds what the last one found,
    so the waits double from `POLL_S` to `IDLE_S`; after its patience (8 s) it stops as
    `no_workers`. Looking every `POLL_S` it would have fetched about 40 times."""
    url, mirror, trace = f"file://{server_repo(tmp_path / 'run.git')}", tmp_path / "mirror", tmp_path / "trace"
    code, _, err = finish(coordinator(url, mirror, model_server, "--patience", "8", trace=trace), 90)
    assert code == 1 and "no worker held or closed a claim for 8 s" in err, err
    assert git_commands(trace)["fetch"] <= 8 / POLL_S / 3


def test_the_pace_doubles_while_nothing_moves_and_is_quick_again_once_something_does():
    pace = Pace(least_s=0.2, most_s=1.0)
    assert [pace.saw("a") for _ in range(5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert pace.saw("b") == 0.2 and pace.saw("b") == 0.4
    assert pace.saw(None) == 0.2 and pace.saw(None) == 0.4  # an unreachable remote: looked at less often too


def test_a_worker_refuses_a_run_of_another_protocol(tmp_path: Path, memory: Memory, problem_dir: Path):
    """A run published by a gitswarm of another run protocol (or of none, before they were
    numbered): the worker says which, and what to do, and exits 2 at once (not after its patience)."""
    from typer.testing import CliRunner

    from gitswarm.cli.main import app
    from gitswarm.engine.config import SolveConfig
    from gitswarm.problems.loader import load_set
    from gitswarm.remote import publish
    from gitswarm.remote.coordinator import OWN_REFS
    from gitswarm.remote.transport import Remote

    url = server_repo(tmp_path / "run.git").as_uri()
    settings = publish.settings_of(SolveConfig(problems=problem_dir, run=memory.path, model="openai/m"),
                                   load_set(problem_dir), ["sum"], 600)
    for theirs, said in ((publish.PROTOCOL + 1, f"gitswarm 9.9 (run protocol {publish.PROTOCOL + 1})"),
                         (None, "a gitswarm from before run protocols were numbered")):
        publish.write_settings(memory, {**settings, "protocol": theirs, "gitswarm": "9.9"})
        publish.Publisher(Remote(url, memory.path), OWN_REFS).push(OWN_REFS)
        done = CliRunner().invoke(app, ["worker", url, "--model", "openai/m", "--dir", str(tmp_path / "w"),
                                        "--patience", "60"], env=env())
        assert done.exit_code == 2, done.stderr
        assert said in done.stderr and "install the coordinator's gitswarm here" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
