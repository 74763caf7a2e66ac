"""A run on a git remote through the real CLI: one coordinator (`gitswarm solve SET --run URL
--workers 0`) and three `gitswarm worker` processes, the demo's scripted model behind one fake
server process, over a `file://` bare repository and a real `git daemon` on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import fsck_clean, git

from gitswarm.demo import audit
from gitswarm.remote.daemon import bare
from gitswarm.resources import resolve_set

BUDGET = 24


def server_repo(path: Path) -> Path:
    """A bare repository as the README says to make one: HEAD on main, so `git clone` checks it out."""
    bare(path)
    git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    return path


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitswarm", *args]


def env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "not-secret"}


def coordinator(url: str, mirror: Path, api: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(cli("solve", str(resolve_set("demo")), "--run", url, "--mirror", str(mirror),
                                "--workers", "0", "--budget", str(BUDGET), "--model", "openai/gitswarm-scripted",
                                "--api-base", api, "--claim-ttl", "4", "--no-tui", *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def worker(url: str, folder: Path, name: str, api: str, watch: bool = False) -> subprocess.Popen:
    """A worker process; with `watch`, its JSON events can be read from its stdout (read them:
    a full pipe would block it)."""
    return subprocess.Popen(cli("worker", url, "--name", name, "-C", "2", "--model", "openai/gitswarm-scripted",
                                "--api-base", api, "--dir", str(folder), "--patience", "60", "--json"),
                            stdout=subprocess.PIPE if watch else subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env())


def finish(process: subprocess.Popen, timeout: float = 180) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def check_run(mirror: Path, remote: Path) -> None:
    """The invariants of a finished remote run, read with plain git."""
    assert audit.charged(mirror) <= BUDGET
    assert audit.duplicated(mirror) == 0, audit.ops(mirror).most_common(3)
    assert fsck_clean(mirror) and fsck_clean(remote)
    assert git(mirror, "branch", "--list", "swarm/*").strip() == ""  # every adopted branch merged
    adopted = git(mirror, "for-each-ref", "--format=%(objectname)", "refs/gitswarm/ops/").split()
    for commit in adopted:  # every contribution reachable from main, on the remote too
        git(remote, "merge-base", "--is-ancestor", commit, "main")
    assert git(remote, "rev-parse", "main") == git(mirror, "rev-parse", "main")
    assert git(remote, "rev-parse", "refs/gitswarm/stop").strip()


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
    status = subprocess.run(cli("status", str(tmp_path / "mirror")), capture_output=True, text=True, env=env())
    assert status.returncode == 0, status.stderr
    for name in ("a", "b", "c"):
        assert f"\n{name} " in status.stdout or status.stdout.startswith(f"{name} ")
