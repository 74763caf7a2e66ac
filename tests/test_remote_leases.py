"""Stale leases on a run's remote, through the real CLI (a coordinator, `gitswarm worker`
processes and the demo's scripted model behind one fake server process): a worker's push
whose lease on its own refs fails because another process runs under its name, and the
coordinator's publish whose lease fails because the remote's main moved, first back along
the run's own history, then to a commit of someone else's. Nothing is overwritten that is
not the run's own, each refusal is in an event log, and every loop ends."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import fsck_clean, git
from test_remote_faults import adopted_commits, check_claims, processes, wait_until
from test_remote_run import BUDGET, check_run, coordinator, finish, server_repo, worker

from gitswarm.core.remote_events import PublishRefused, PushRefused
from gitswarm.demo import audit
from gitswarm.engine.events import read_events

pytestmark = pytest.mark.slow
RUN_S = 120


def test_two_workers_under_one_name(tmp_path: Path, model_server: str):
    """Two processes started as `--name a`: the one whose push finds the other's commits on
    its own refs is refused (its lease fails and the remote's value is no commit of its own),
    says so in its event log and on stderr and exits 1; its claims expire and other workers
    run them, and the run completes with nothing merged twice or lost."""
    remote = server_repo(tmp_path / "run.git")
    url = remote.as_uri()
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server)) as running:
        running += [worker(url, tmp_path / folder, name, model_server)
                    for folder, name in (("a1", "a"), ("a2", "a"), ("b", "b"))]
        code, _, err = finish(running[0], RUN_S)
        assert code == 0, err
        ends = {folder: finish(w, 60) for folder, w in zip(("a1", "a2", "b"), running[1:], strict=True)}
    check_run(mirror, remote)
    check_claims(remote, mirror)
    assert ends["b"][0] == 0
    assert sorted(ends[f][0] for f in ("a1", "a2")) == [0, 1], ends
    loser = next(f for f in ("a1", "a2") if ends[f][0] == 1)
    assert "another process pushes as worker 'a'" in ends[loser][2] and "--name" in ends[loser][2]
    refused = [e for e in read_events(tmp_path / loser) if isinstance(e, PushRefused)]
    assert len(refused) == 1 and refused[0].refs, refused
    assert "refs/gitswarm/workers/a/" in refused[0].refs[0]


def ancestor(repo: Path, old: str, new: str = "main") -> bool:
    return subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", old, new]).returncode == 0


def someone_elses_commit(repo: Path) -> str:
    """A commit made on the server by hand, outside the run's history."""
    tree = subprocess.run(["git", "-C", str(repo), "mktree"], input="", capture_output=True, text=True,
                          check=True).stdout.strip()
    return subprocess.run(["git", "-C", str(repo), "commit-tree", tree, "-m", "someone else's main"],
                          capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "eve", "GIT_AUTHOR_EMAIL": "eve@example.invalid",
                               "GIT_COMMITTER_NAME": "eve", "GIT_COMMITTER_EMAIL": "eve@example.invalid"}
                          ).stdout.strip()


def test_the_coordinators_publish_found_stale(tmp_path: Path, model_server: str):
    """The remote's main moved back along the run's history (as a killed coordinator's last
    push landing late would leave it): the next publish reads it again and goes on. Then
    moved to someone else's commit: the coordinator leaves it there, says why in its event
    log and on stderr, publishes the stop so the workers end, and exits 1; started again
    (same mirror, or a fresh one) it refuses at once and pushes nothing."""
    remote = server_repo(tmp_path / "run.git")
    url = remote.as_uri()
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server)) as running:
        running += [worker(url, tmp_path / name, name, model_server) for name in ("a", "b")]
        wait_until("three episodes adopted", lambda: len(adopted_commits(remote)) >= 3)
        tip = git(remote, "rev-parse", "main").strip()
        git(remote, "update-ref", "refs/heads/main", f"{tip}~1", tip)
        wait_until("main published past the rewound tip", lambda: ancestor(remote, tip) and
                   git(remote, "rev-parse", "main").strip() != tip)
        theirs = someone_elses_commit(remote)
        git(remote, "update-ref", "refs/heads/main", theirs)
        code, _, err = finish(running[0], RUN_S)
        assert code == 1 and "refs/heads/main on the remote" in err and "not in this run's history" in err, err
        for w in running[1:]:
            assert finish(w, 60)[0] == 1  # the run's stop: remote_moved
    assert git(remote, "rev-parse", "main").strip() == theirs  # not overwritten
    assert json.loads(git(remote, "show", "refs/gitswarm/stop:stop.json"))["reason"] == "remote_moved"
    refused = [e for e in read_events(mirror) if isinstance(e, PublishRefused)]
    assert [(e.ref, e.found) for e in refused] == [("refs/heads/main", theirs)], refused
    before = git(remote, "for-each-ref")
    with processes(*(coordinator(url, m, model_server) for m in (mirror, tmp_path / "fresh"))) as again:
        for p in again:
            code, _, err = finish(p, 60)
            assert code == 1 and "refs/heads/main on the remote" in err and "not in this run's history" in err, err
    assert git(remote, "for-each-ref") == before
    assert fsck_clean(mirror) and fsck_clean(remote)
    assert audit.duplicated(mirror) == 0 and audit.charged(mirror) <= BUDGET
