"""`gitswarm worker` in the dashboard, as `solve` runs in it: a coordinator process on a
`file://` remote, and a worker whose episodes the dashboard shows live (textual's pilot)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git

from gitswarm.cli.worker import STOP_ENDED, worker_engine
from gitswarm.core.control import Control
from gitswarm.remote.daemon import bare
from gitswarm.remote.worker import WorkerOptions
from gitswarm.resources import resolve_set
from gitswarm.tui.app import Dashboard
from gitswarm.tui.tables import WorkersTable

pytestmark = pytest.mark.anyio
MODEL = "openai/gitswarm-scripted"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_worker_runs_its_episodes_inside_the_dashboard(tmp_path: Path, model_server: str,
                                                               monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "not-secret")
    remote = bare(tmp_path / "remote.git")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    url = remote.as_uri()
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "gitswarm", "solve", str(resolve_set("demo")), "--run", url, "--mirror",
         str(tmp_path / "mirror"), "--workers", "0", "--budget", "6", "--model", MODEL, "--api-base", model_server,
         "--claim-ttl", "4", "--no-tui"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OPENAI_API_KEY": "not-secret"})
    try:
        options = WorkerOptions(url, tmp_path / "box", "box", 2, {"model": MODEL, "api_base": model_server}, 60.0)
        control, said = Control(), []
        app = Dashboard(options.folder, engine=worker_engine(options, control, said.append), control=control)
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 180
            while not app.finished:
                assert time.monotonic() < deadline, "the worker did not finish in the dashboard"
                await pilot.pause(0.2)
            assert app.error is None, app.error
            assert app.result.reason in STOP_ENDED, app.result
            assert app.state.feed_total >= 1 and app.state.header.stopped
            assert {w.split("-")[0] for w in app.state.workers} == {"box"}  # its episodes' workers: box-w01, ...
            assert app.query_one(WorkersTable).row_count >= 1
            await pilot.press("q")
    finally:
        _, err = coordinator.communicate(timeout=120)
    assert coordinator.returncode == 0, err
