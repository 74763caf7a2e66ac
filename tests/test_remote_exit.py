"""A worker that leaves a run that goes on says so: after SIGTERM it pushes its exit mark, and
`status` by the run's URL shows it `exited` (with why) while the coordinator still runs, not
`idle` as if it were waiting for work. A worker started again under the same name clears it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from conftest import brain_server
from test_remote_run import cli, coordinator, env, finish, server_repo, worker

from gitswarm.remote import exits, layout
from gitswarm.remote.transport import Remote


@pytest.fixture
def slow_server() -> Iterator[str]:
    yield from brain_server("0.5")


def first_push(process: subprocess.Popen, timeout: float = 600) -> None:
    """Read the worker's JSON events until it has pushed an episode's results."""
    deadline = time.monotonic() + timeout
    for line in process.stdout:
        assert time.monotonic() < deadline, "the worker pushed nothing"
        if json.loads(line).get("kind") == "pushed":
            return
    raise AssertionError("the worker ended before it pushed anything")


def workers_of(url: str) -> dict[str, dict]:
    shown = subprocess.run(cli("status", url, "--json"), capture_output=True, text=True, env=env(), check=True)
    return {w["name"]: w for w in json.loads(shown.stdout)["workers"]}


@pytest.mark.e2e
def test_a_worker_stopped_by_its_user_shows_exited_while_the_run_goes_on(tmp_path: Path, slow_server: str):
    remote = server_repo(tmp_path / "run.git")
    url = f"file://{remote}"
    coord = coordinator(url, tmp_path / "mirror", slow_server, "--patience", "120")
    try:
        box = worker(url, tmp_path / "box", "box", slow_server, watch=True)
        first_push(box)
        box.send_signal(signal.SIGTERM)
        code, _, err = finish(box, timeout=60)
        assert code in (0, 130, 143), err
        assert coord.poll() is None  # the run goes on without it
        shown = workers_of(url)["box"]
        assert shown["state"] == "exited" and shown["left"], shown
        mark = pygit2.Repository(str(remote)).references[layout.worker_ref("box", exits.EXITED)]
        assert mark is not None
        # the same name joins again: its mark is cleared, and it is no longer shown as gone
        mirror = Remote(url, tmp_path / "box")
        mirror.fetch([layout.workers_refspec("box")])
        exits.clear(mirror, "box")
        assert layout.worker_ref("box", exits.EXITED) not in pygit2.Repository(str(remote)).references
        assert workers_of(url)["box"]["state"] != "exited"
    finally:
        coord.send_signal(signal.SIGINT)
        finish(coord, timeout=60)


def test_a_mark_older_than_the_last_push_is_a_past_exit():
    mark = exits.Exit("user", "stopped by its user", at=1_700_000_100)
    assert mark.after(1_700_000_100) and mark.after(1_700_000_000)
    assert not mark.after(1_700_000_101)  # the worker came back and pushed since
