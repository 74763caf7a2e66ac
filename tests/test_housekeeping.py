"""The repositories gitswarm runs git in keep themselves: git's automatic gc off, a geometric
repack in the background once loose objects or packs pass a bound (`remote/housekeeping.py`).
Real bare repositories and the real git CLI."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pygit2

from gitswarm.memory.gitdir import GitDir
from gitswarm.remote import housekeeping, transport
from gitswarm.remote.transport import Remote, Update


def _loose(path: Path) -> int:
    return sum(1 for d in (path / "objects").iterdir() if len(d.name) == 2 for _ in d.iterdir())


def _packs(path: Path, suffix: str = ".pack") -> int:
    return sum(1 for p in (path / "objects" / "pack").iterdir() if p.name.endswith(suffix))


def _blobs(path: Path, n: int, tag: str) -> list[pygit2.Oid]:
    repo = pygit2.Repository(str(path))
    return [repo.create_blob(f"{tag} {i}\n".encode()) for i in range(n)]


def _remote(tmp_path: Path) -> tuple[Remote, str]:
    origin = tmp_path / "origin.git"
    gd = GitDir.init(origin)
    commit = gd.commit({"a.txt": b"a\n"}, "one\n")
    gd.move("refs/heads/main", commit, None)
    return Remote(origin.as_uri(), tmp_path / "mirror"), commit


def test_a_mirror_has_git_s_automatic_housekeeping_off(tmp_path: Path) -> None:
    remote, _ = _remote(tmp_path)
    gd = remote.gitdir()
    assert {k: gd.config(k) for k in housekeeping.OWN} == housekeeping.OWN
    gd.configure({"gc.auto": "6700"})  # a user's, or an older gitswarm's: set again on the next open
    Remote(remote.url, remote.mirror)
    assert GitDir(remote.mirror).config("gc.auto") == "0"


def test_a_fetch_starts_a_repack_once_loose_objects_pass_the_bound(tmp_path: Path) -> None:
    remote, commit = _remote(tmp_path)
    remote.fetch(["+refs/heads/main:refs/heads/main"])
    remote.housekeeper.wait(60)
    assert remote.housekeeper.repacks == 0  # a handful of objects: nothing due
    written = _blobs(remote.mirror, 2 * housekeeping.LOOSE, "loose")
    ops = {f"refs/gitswarm/ops/e{i:05d}-final": commit for i in range(300)}  # an op ref per episode
    for name, value in ops.items():
        remote.gitdir().follow(name, value)
    assert remote.housekeeper.due()
    remote.fetch(["+refs/heads/main:refs/heads/main"])
    assert remote.housekeeper.repacks == 1
    remote.fetch(["+refs/heads/main:refs/heads/main"])  # one at a time: never a second beside it
    remote.housekeeper.wait(60)
    assert remote.housekeeper.repacks == 1 and remote.housekeeper.stopped is None
    assert _loose(remote.mirror) < 50 and _packs(remote.mirror) >= 1
    assert _packs(remote.mirror, ".bitmap") == 0
    assert not remote.housekeeper.due()
    repo = pygit2.Repository(str(remote.mirror))
    assert all(oid in repo for oid in written) and commit in repo  # unreachable ones kept too
    assert not list((remote.mirror / "refs" / "gitswarm" / "ops").glob("e*"))  # the refs packed, same values
    assert {n: remote.local(n) for n in ops} == ops
    assert "refs/gitswarm/ops/e00299-final" in (remote.mirror / "packed-refs").read_text()
    chain = remote.mirror / "objects" / "info" / "commit-graphs" / "commit-graph-chain"
    assert chain.is_file()  # a commit-graph layer of the commits the refs name, which git verifies
    subprocess.run(["git", "-C", str(remote.mirror), "commit-graph", "verify", "--no-progress"], check=True)
    assert not (remote.mirror / "objects" / "info" / "commit-graph").exists()  # libgit2's file: not written


def test_writers_beside_a_repack_lose_nothing(tmp_path: Path) -> None:
    """The repack deletes only what it packed: objects written while it runs, loose or in a
    pack of their own (a fetch), stay readable."""
    remote, _ = _remote(tmp_path)
    _blobs(remote.mirror, 2 * housekeeping.LOOSE, "before")
    beside: list[pygit2.Oid] = []
    assert remote.housekeeper.step()
    assert remote.housekeeper.running is not None and remote.housekeeper.running.poll() is None
    writer = threading.Thread(target=lambda: beside.extend(_blobs(remote.mirror, 1000, "beside")))
    writer.start()
    pack = subprocess.run(["git", "-C", str(remote.mirror), "pack-objects", "-q",
                           str(remote.mirror / "objects" / "pack" / "beside")],
                          input="".join(f"{o}\n" for o in _blobs(remote.mirror, 200, "packed")),
                          text=True, capture_output=True, check=True)
    writer.join()
    remote.housekeeper.wait(60)
    repo = pygit2.Repository(str(remote.mirror))
    assert all(oid in repo for oid in beside)
    assert pack.stdout.strip() and len(beside) == 1000


def test_a_repack_git_refuses_stops_housekeeping_and_says_why(tmp_path: Path) -> None:
    """A git without geometric repacking (older than 2.32): the refusal is remembered, nothing
    else is tried; fetches go on."""
    remote, _ = _remote(tmp_path)
    _blobs(remote.mirror, 2 * housekeeping.LOOSE, "loose")
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(f"""#!/bin/sh
if [ "$3" = repack ]; then echo "error: unknown option 'geometric=2'" >&2; exit 129; fi
exec {real} "$@"
""")
    os.chmod(fake / "git", 0o755)
    path = os.environ["PATH"]
    os.environ["PATH"] = f"{fake}{os.pathsep}{path}"
    try:
        remote.fetch(["+refs/heads/main:refs/heads/main"])
        remote.housekeeper.wait(60)
        remote.fetch(["+refs/heads/main:refs/heads/main"])
    finally:
        os.environ["PATH"] = path
    assert remote.housekeeper.repacks == 1
    assert "geometric" in (remote.housekeeper.stopped or "")
    assert remote.local("refs/heads/main") is not None


def test_pushes_run_from_an_outbox_that_holds_no_ref(tmp_path: Path) -> None:
    """A push of many refs from a mirror of many refs: git matches every refspec against every
    local ref, so pushes run from the mirror's outbox (no refs, the mirror's objects through
    a relative alternates path, which still holds once the mirror has moved)."""
    remote, commit = _remote(tmp_path)
    remote.fetch(["+refs/heads/main:refs/heads/main"])
    gd = remote.gitdir()
    for i in range(2000):
        gd.follow(f"refs/gitswarm/ops/e{i:05d}-final", commit)
    ours = [gd.commit({"n.txt": f"{i}\n".encode()}, f"op {i}\n", [commit]) for i in range(200)]
    remote.push([Update(f"refs/gitswarm/ops/new-{i:03d}", c) for i, c in enumerate(ours)])
    moved = tmp_path / "moved"
    remote.mirror.rename(moved)
    again = Remote(remote.url, moved)
    last = again.gitdir().commit({"m.txt": b"m\n"}, "moved\n", [commit])
    again.push([Update("refs/heads/main", last, commit)])
    there = Remote(remote.url, tmp_path / "reader").refs()
    assert there["refs/heads/main"] == last
    assert [there[f"refs/gitswarm/ops/new-{i:03d}"] for i in range(200)] == ours
    outbox = moved / transport.OUTBOX
    assert all(p.is_dir() for p in (outbox / "refs").rglob("*"))  # not one ref file
    assert not (outbox / "packed-refs").exists()
    assert not [p for p in (outbox / "objects").iterdir() if p.name not in ("info", "pack")]
    assert not list((outbox / "objects" / "pack").iterdir())
