"""The traps of many machines, through the real CLI over `file://` remotes: a folder made for
one remote (a coordinator's mirror, a worker's folder, the demo's local run) refused with
another before anything is pushed, and the default mirror of a remote run named after its
remote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git

from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.remote import owner
from gitswarm.remote.daemon import bare
from gitswarm.remote.errors import ForeignFolder
from gitswarm.resources import resolve_set

MODEL = "openai/gitswarm-scripted"


def cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitswarm", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={**os.environ, "OPENAI_API_KEY": "not-secret"})


def server_repo(path: Path) -> Path:
    bare(path)
    git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    return path


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def coordinator(url: str, mirror: Path, api: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli("solve", str(resolve_set("demo")), "--run", url, "--mirror", str(mirror), "--workers", "0",
               "--budget", "4", "--model", MODEL, "--api-base", api, "--claim-ttl", "4", "--no-tui", *extra)


def said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stderr.split())


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """A short run on one remote (budget 4) by a coordinator and worker `box2`, both ended."""
    from conftest import brain_server

    tmp = tmp_path_factory.mktemp("first")
    remote = server_repo(tmp / "a.git")
    url = f"file://{remote}"
    servers = brain_server("0.05")
    api = next(servers)
    try:
        coord = subprocess.Popen([sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run",
                                  url, "--mirror", str(tmp / "mirror"), "--workers", "0", "--budget", "4",
                                  "--model", MODEL, "--api-base", api, "--claim-ttl", "4", "--no-tui"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "OPENAI_API_KEY": "not-secret"})
        worked = cli("worker", url, "--name", "box2", "--workers", "2", "--model", MODEL, "--api-base", api,
                     "--dir", str(tmp / "box2"), "--patience", "60", "--json", timeout=180)
        _, err = coord.communicate(timeout=180)
        assert coord.returncode == 0, err
        assert worked.returncode == 0, worked.stderr
    finally:
        next(servers, None)
    return {"tmp": tmp, "url": url, "remote": remote, "api": api}


def test_a_local_run_is_not_pushed_into_a_remote(tmp_path: Path):
    run = tmp_path / "runs" / "demo"  # the quick start's demo run, where the README's order leads
    memory = Memory.create(run, load_set(resolve_set("demo")))
    before = refs(run)
    remote = server_repo(tmp_path / "demo.git")
    done = coordinator(f"file://{remote}", run, "http://127.0.0.1:9/v1")
    assert done.returncode == 2, done.stderr
    assert f"holds the run {memory.run_id}, which is not a mirror of file://{remote}" in said(done)
    assert f"a folder of its own, --mirror {owner.default_mirror(f'file://{remote}')} (or any new folder)" in said(done)
    assert f"`--run {run}` for a run made here" in said(done)
    assert "Traceback" not in done.stderr
    assert refs(remote) == "" and refs(run) == before  # nothing pushed, the local run unchanged
    assert f"its mirror here is {run}" in done.stdout  # said before the check, so the user sees which


def test_a_git_failure_without_words_does_not_point_at_them():
    """A git killed by a signal says nothing: the message must not send the user to read it."""
    from gitswarm.remote import gitcli

    silent, said_something = gitcli.classify("file:///x.git", ""), gitcli.classify("file:///x.git", "fatal: bad")
    assert "above" not in str(silent) and "gave no reason" in str(silent)
    assert "(git: fatal: bad); fix what git says" in str(said_something)


@pytest.mark.slow  # the short run of `first_run`: about a minute on 2 shared cores
def test_a_mirror_belongs_to_its_remote(first_run, tmp_path: Path):
    mirror, url = first_run["tmp"] / "mirror", first_run["url"]
    assert git(mirror, "config", owner.REMOTE_KEY).strip() == url
    other = server_repo(tmp_path / "b.git")
    done = coordinator(f"file://{other}", mirror, first_run["api"])
    assert done.returncode == 2, done.stderr
    assert f"is the mirror of the run on {url}, not of file://{other}" in said(done)
    assert f"--run {url}" in said(done)
    assert refs(other) == ""


@pytest.mark.slow  # the short run of `first_run`: about a minute on 2 shared cores
def test_a_mirror_from_before_the_stamp_is_judged_by_what_it_holds(first_run, tmp_path: Path):
    mirror, url = first_run["tmp"] / "mirror", first_run["url"]
    copy = tmp_path / "old-mirror"
    subprocess.run(["cp", "-r", str(mirror), str(copy)], check=True)
    git(copy, "config", "--unset", owner.REMOTE_KEY)
    owner.check_mirror(copy, url)  # it holds the remote's main: its own mirror
    other = server_repo(tmp_path / "b.git")
    with pytest.raises(ForeignFolder, match="not a mirror of"):
        owner.check_mirror(copy, f"file://{other}")


@pytest.mark.slow  # the short run of `first_run`: about a minute on 2 shared cores
def test_a_worker_folder_belongs_to_one_remote_and_one_name(first_run, tmp_path: Path):
    folder, url, api = first_run["tmp"] / "box2", first_run["url"], first_run["api"]
    assert git(folder, "config", owner.WORKER_KEY).strip() == "box2"
    other = server_repo(tmp_path / "b.git")
    common = ("--model", MODEL, "--api-base", api, "--dir", str(folder), "--patience", "5")
    done = cli("worker", f"file://{other}", "--name", "box2", *common)
    assert done.returncode == 2, done.stderr
    assert f"is the folder of worker 'box2' of the run on {url}, not of file://{other}" in said(done)
    assert "--dir DIR" in said(done) and refs(other) == ""
    renamed = cli("worker", url, "--name", "box3", *common)
    assert renamed.returncode == 2, renamed.stderr
    assert "is the folder of worker 'box2', not of 'box3'" in said(renamed)
    assert "start it as --name box2, or give worker 'box3' a folder of its own with --dir DIR" in said(renamed)


@pytest.mark.slow  # the short run of `first_run`: about a minute on 2 shared cores
def test_a_worker_folder_of_another_run_is_refused(first_run, tmp_path: Path):
    """A folder from before the stamp (or a remote made again at the same address) that holds
    a worker of another run: refused once the run's meta is read, nothing pushed."""
    folder = tmp_path / "box2"
    subprocess.run(["cp", "-r", str(first_run["tmp"] / "box2"), str(folder)], check=True)
    for key in (owner.REMOTE_KEY, owner.WORKER_KEY, owner.RUN_KEY):
        git(folder, "config", "--unset", key)
    held = owner.check_worker(folder, "file:///elsewhere.git", "box2")
    other = tmp_path / "other-run"
    Memory.create(other, load_set(resolve_set("demo")), run_id="another-run")
    git(folder, "fetch", "-q", str(other), "+refs/gitswarm/meta:refs/gitswarm/meta")  # as join fetches it
    with pytest.raises(ForeignFolder, match=r"holds a worker of the run .* and the run on file:///elsewhere.git is "
                                            r"another-run"):
        owner.bind_worker(folder, "file:///elsewhere.git", "box2", held)


@pytest.mark.parametrize(("url", "slug"), [
    ("ssh://server/srv/git/imo.git", "server-srv-git-imo"),
    ("file:///tmp/x/demo.git", "tmp-x-demo"),
    ("alice@host:runs/imo.git", "host-runs-imo"),
    ("https://alice:secret@example.org/team/run.git/", "example.org-team-run"),
])
def test_the_default_mirror_is_named_after_the_remote(url: str, slug: str):
    assert owner.default_mirror(url) == Path("runs") / "remotes" / slug
    assert owner.default_worker_folder(url, "box1") == Path("runs") / "workers" / slug / "box1"
    assert "secret" not in str(owner.default_mirror(url))


REFUSE_BAD = """#!/bin/sh
while read old new ref; do
  case "$ref" in refs/gitswarm/workers/bad/*) echo "pushes of worker bad are refused here" >&2; exit 1;; esac
done
exit 0
"""
"""A pre-receive hook refusing every push that carries worker `bad`'s results."""


@pytest.mark.slow  # a short run, a worker failing and a second finishing it: about a minute
def test_a_worker_whose_pushes_keep_failing_releases_its_claims_and_exits(tmp_path: Path, model_server: str):
    import json
    import time

    remote = server_repo(tmp_path / "run.git")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(REFUSE_BAD)
    hook.chmod(0o755)
    url = f"file://{remote}"
    coord = subprocess.Popen([sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run", url,
                              "--mirror", str(tmp_path / "mirror"), "--workers", "0", "--budget", "4", "--model",
                              MODEL, "--api-base", model_server, "--patience", "120", "--no-tui"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "OPENAI_API_KEY": "not-secret"})
    try:
        started = time.time()
        bad = cli("worker", url, "--name", "bad", "--workers", "2", "--model", MODEL, "--api-base", model_server,
                  "--dir", str(tmp_path / "bad"), "--patience", "60", "--json", timeout=120)
        assert bad.returncode == 1, bad.stderr
        assert "worker 'bad' could not push the results of e0000" in said(bad)
        assert "pushes of worker bad are refused here" in said(bad)
        assert "it released its claims, so other workers run those episodes again" in said(bad)
        kinds = [json.loads(line)["kind"] for line in (tmp_path / "bad" / "gitswarm-events.jsonl").open()]
        assert kinds.count("push_failed") >= 5 and "push_abandoned" in kinds and "claims_released" in kinds
        claims = git(remote, "for-each-ref", "--format=%(refname)", "refs/gitswarm/claims/").split()
        held = [json.loads(git(remote, "show", f"{ref}:claim.json")) for ref in claims]
        held = [c for c in held if c["worker"] == "bad"]
        assert held and all(not c["done"] and c["expires"] <= time.time() for c in held)  # released, not held
        good = cli("worker", url, "--name", "good", "--workers", "2", "--model", MODEL, "--api-base", model_server,
                   "--dir", str(tmp_path / "good"), "--patience", "60", "--json", timeout=180)
        assert good.returncode == 0, good.stderr
        _, err = coord.communicate(timeout=120)
        assert coord.returncode == 0, err
        assert time.time() - started < 600  # the claims' time to live (600 s) was not waited out
        assert git(remote, "for-each-ref", "refs/gitswarm/workers/bad/") == ""
    finally:
        coord.kill()
        coord.wait()


@pytest.mark.slow  # one worker of two slots until every problem is set aside: about a minute
def test_a_run_whose_workers_are_too_few_to_verify_stops_and_says_so(tmp_path: Path, model_server: str):
    """verify 2 needs two pass reviews from slots other than the author's: one worker of two
    slots verifies nothing, and the run's no-progress stop names that cause and its fix."""
    url = f"file://{server_repo(tmp_path / 'run.git')}"
    coord = subprocess.Popen([sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run", url,
                              "--mirror", str(tmp_path / "mirror"), "--workers", "0", "--budget", "60",
                              "--no-progress", "2", "--model", MODEL, "--api-base", model_server, "--no-tui"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "OPENAI_API_KEY": "not-secret"})
    try:
        worked = cli("worker", url, "--name", "solo", "--workers", "2", "--model", MODEL, "--api-base", model_server,
                     "--dir", str(tmp_path / "solo"), "--references", "demo", "--patience", "60", timeout=300)
        _, err = coord.communicate(timeout=180)
    finally:
        coord.kill()
        coord.wait()
    assert coord.returncode == 1 and worked.returncode == 0, (err, worked.stderr)
    told = " ".join(err.split())
    assert "no progress: every open problem is set aside after 2 episodes in a row" in told
    assert "only 2 worker slot(s) took part (solo-w01, solo-w02), and a candidate is verified by 2 pass " in told
    assert f"`gitswarm worker {url} --workers 3`), or solve with a smaller --verify" in told
    assert "only 2 worker slot(s) took part" in " ".join(worked.stdout.split())  # the worker reads the same stop


OFFLINE = """\
python -m gitswarm.fakeserver --demo --port 8000 &        # the demo's scripted model, offline
git init --bare --initial-branch=main /tmp/demo.git
gitswarm solve problems/demo --run file:///tmp/demo.git --workers 0 --model openai/gitswarm-scripted --api-base http://127.0.0.1:8000/v1 --budget 60 --no-tui &
gitswarm worker file:///tmp/demo.git --model openai/gitswarm-scripted --api-base http://127.0.0.1:8000/v1 --workers 2 --name box1 --references problems/demo --no-tui &
gitswarm worker file:///tmp/demo.git --model openai/gitswarm-scripted --api-base http://127.0.0.1:8000/v1 --workers 2 --name box2 --references problems/demo --no-tui
gitswarm status file:///tmp/demo.git
"""  # noqa: E501  (as docs/many-machines.md writes them)
"""The docs' offline try of many machines, as docs/many-machines.md writes it."""


@pytest.mark.slow  # a budget of 60 across a coordinator and two workers: two minutes or so on 2 shared cores
def test_the_docs_many_machines_commands_run_offline(tmp_path: Path):
    """Each command as written, in a shell in a fresh folder holding the shipped problems/, with
    no API key in the environment; only the port and /tmp are this test's own."""
    import re
    import socket
    import time

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    script = OFFLINE.replace("8000", str(port)).replace("/tmp/demo.git", str(tmp_path / "demo.git"))
    (tmp_path / "problems").symlink_to(resolve_set("demo").parent)
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"PATH": path}
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:  # files: the background jobs outlive the shell
        shell = subprocess.Popen(["bash", "-c", "set -e\n" + script], cwd=tmp_path, env=environ, text=True,
                                 stdout=stdout, stderr=stderr, start_new_session=True)
    try:
        assert shell.wait(timeout=600) == 0, err.read_text()[-3000:]
        deadline = time.monotonic() + 120  # the coordinator, in the background, selects and ends
        while "stopped (" not in out.read_text():  # the budget spent, or every problem settled
            assert time.monotonic() < deadline, out.read_text()[-3000:] + err.read_text()[-3000:]
            time.sleep(1)
    finally:
        os.killpg(shell.pid, 15)  # the fake server, left in the background as the docs leave it
    said = out.read_text()
    assert "Traceback" not in err.read_text()
    assert f"give --model openai/gitswarm-scripted --api-base http://127.0.0.1:{port}/v1" in said
    assert re.search(r"worker box2: .*(budget|settled)", said), said[-2000:]
    status = said.split("worker box2:")[-1]
    assert "box1" in status and "box2" in status  # `status URL` lists both worker processes
    table = status.split("\nPROBLEM ", 1)[-1]
    rows = [line.split() for line in table.splitlines() if line.startswith("demo-")]
    assert len(rows) == 5 and all(row[1] == "selected" for row in rows), status  # a solution for every problem


def test_the_docs_write_the_offline_commands():
    """docs/many-machines.md carries `OFFLINE`, the commands the test above runs."""
    page = (Path(__file__).parents[1] / "docs" / "many-machines.md").read_text()
    assert all(line.split("  #")[0].strip() in page for line in OFFLINE.splitlines())
