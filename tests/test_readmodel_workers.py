"""The worker processes of a remote run as the read model has them: a process of a stopped run
that holds nothing has exited; before the stop it is idle."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from gitswarm.memory.snapshot import Snapshot
from gitswarm.readmodel.workers import WorkerState, read_workers
from gitswarm.remote.publish import STOP_REF

SIG = pygit2.Signature("t", "t@example.org", 1_700_000_000, 0)


def commit(repo: pygit2.Repository, ref: str, files: dict[str, bytes]) -> None:
    """One commit at `ref` holding `files` (paths with one level of folders at most)."""
    folders: dict[str, pygit2.TreeBuilder] = {}
    root = repo.TreeBuilder()
    for path, data in files.items():
        *folder, name = path.split("/")
        builder = root if not folder else folders.setdefault("/".join(folder), repo.TreeBuilder())
        builder.insert(name, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    nested: dict[str, pygit2.TreeBuilder] = {}
    for folder, builder in folders.items():  # episodes/<e>/<record>: two levels
        top, sub = folder.split("/")
        nested.setdefault(top, repo.TreeBuilder()).insert(sub, builder.write(), pygit2.GIT_FILEMODE_TREE)
    for top, builder in nested.items():
        root.insert(top, builder.write(), pygit2.GIT_FILEMODE_TREE)
    repo.create_commit(ref, SIG, SIG, "test\n", root.write(), [])


def mirror(tmp_path: Path) -> pygit2.Repository:
    """A coordinator's mirror as the read model opens it: main and nothing else yet."""
    repo = pygit2.init_repository(str(tmp_path / "mirror"), bare=True)
    commit(repo, "refs/heads/main", {"README.md": b"run\n"})
    return repo


def workers(repo: pygit2.Repository, scheduler: dict) -> dict[str, WorkerState]:
    return {w.name: w for w in read_workers(Snapshot.of(repo), scheduler)}


def test_a_process_of_a_stopped_run_has_exited(tmp_path: Path):
    repo = mirror(tmp_path)
    commit(repo, "refs/gitswarm/workers/box1/gitswarm/ledger",
           {"episodes/e00001/record.json": json.dumps({"status": "merged"}).encode()})
    scheduler = {"spending": {"processes": {"box1": {"held": 0, "expired": 0, "tokens": 10},
                                            "box2": {"held": 2, "expired": 0, "tokens": 5}}}}
    before = {n: w.state for n, w in workers(repo, scheduler).items()}
    assert before == {"box1": "idle", "box2": "running"}
    commit(repo, STOP_REF, {"stop.json": json.dumps({"reason": "budget", "detail": "budget spent"}).encode()})
    after = workers(repo, scheduler)
    assert {n: w.state for n, w in after.items()} == {"box1": "exited", "box2": "running"}
    assert after["box1"].cells()[1] == "exited" and after["box1"].episodes == 1
    assert WorkerState.from_dict(after["box1"].as_dict()) == after["box1"]  # the report's JSON round trip


def test_a_process_that_marked_its_leaving_has_exited_while_the_run_goes_on(tmp_path: Path):
    repo = mirror(tmp_path)
    commit(repo, "refs/gitswarm/workers/box1/gitswarm/ledger",
           {"episodes/e00001/record.json": json.dumps({"status": "merged"}).encode()})
    commit(repo, "refs/gitswarm/workers/box2/gitswarm/ledger",
           {"episodes/e00002/record.json": json.dumps({"status": "merged"}).encode()})
    left = {"reason": "user", "detail": "stopped by its user", "at": SIG.time}
    commit(repo, "refs/gitswarm/workers/box1/gitswarm/exited", {"exit.json": json.dumps(left).encode()})
    commit(repo, "refs/gitswarm/workers/box2/gitswarm/exited",
           {"exit.json": json.dumps({**left, "at": SIG.time - 60}).encode()})  # it came back and pushed since
    commit(repo, "refs/gitswarm/workers/box3/gitswarm/exited", {"exit.json": b"not json"})
    found = workers(repo, {})
    assert {n: w.state for n, w in found.items()} == {"box1": "exited", "box2": "idle"}
    assert found["box1"].left == "stopped by its user" and found["box2"].left == ""
    assert WorkerState.from_dict(found["box1"].as_dict()) == found["box1"]
