"""The remote transport against real git servers: a file:// bare repository and a git daemon
on loopback. Fetch and push round trips, leases won and lost, atomic creates and batches,
the server going away and coming back, credentials kept out of messages."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from conftest import git
from remote_fixture import commit, fsck_served, served

from gitswarm.errors import BadInput
from gitswarm.remote.daemon import bare
from gitswarm.remote.errors import (
    AuthFailed,
    MissingRef,
    NoRepository,
    PushRejected,
    RefExists,
    StaleLease,
    Unreachable,
)
from gitswarm.remote.gitcli import classify
from gitswarm.remote.transport import Remote, Update
from gitswarm.remote.urls import mask, scheme


@pytest.fixture
def two(remote_url: str, tmp_path: Path) -> tuple[Remote, Remote]:
    """Two mirrors of one remote, as two machines would have."""
    return Remote(remote_url, tmp_path / "a.git"), Remote(remote_url, tmp_path / "b.git")


def test_a_pushed_commit_is_fetched_by_another_mirror(two, remote_url, tmp_path) -> None:
    a, b = two
    first = commit(a, "one")
    a.push([Update("refs/x/one", first)])
    assert a.local("refs/x/one") == first
    b.fetch(["+refs/x/*:refs/x/*"])
    assert b.local("refs/x/one") == first
    assert pygit2.Repository(str(b.mirror))[first].tree["f.txt"].data == b"one"
    assert b.refs("refs/x/one") == {"refs/x/one": first}
    assert fsck_served(served(remote_url, tmp_path))


def test_a_lease_moves_the_ref_only_from_the_value_it_names(two, remote_url, tmp_path) -> None:
    a, b = two
    first = commit(a, "one")
    a.push([Update("refs/x/r", first)])
    second, third = commit(a, "two", first), commit(b, "three")
    a.push([Update("refs/x/r", second, old=first)])
    with pytest.raises(StaleLease) as lost:
        b.push([Update("refs/x/r", third, old=first)])
    assert (lost.value.ref, lost.value.expected, lost.value.stale) == ("refs/x/r", first, ("refs/x/r",))
    assert not isinstance(lost.value, RefExists)
    assert a.refs("refs/x/r") == {"refs/x/r": second}
    b.push([Update("refs/x/r", third, old=second)])  # a lease may also move a ref backwards
    assert a.refs("refs/x/r") == {"refs/x/r": third}
    b.push([Update("refs/x/r", None, old=third)])
    assert a.refs("refs/x/r") == {}
    assert b.local("refs/x/r") is None
    assert fsck_served(served(remote_url, tmp_path))


def test_a_create_fails_when_the_ref_exists_and_a_repeat_succeeds(two) -> None:
    a, b = two
    ours, theirs = commit(a, "ours"), commit(b, "theirs")
    a.push([Update("refs/x/c", ours)])
    a.push([Update("refs/x/c", ours)])  # the same push again (its answer lost): already done
    with pytest.raises(RefExists) as exists:
        b.push([Update("refs/x/c", theirs)])
    assert exists.value.ref == "refs/x/c" and exists.value.expected is None
    assert "already exists" in str(exists.value)
    assert b.refs("refs/x/c") == {"refs/x/c": ours}


def test_an_atomic_push_with_one_stale_lease_changes_nothing(two) -> None:
    a, b = two
    base = commit(a, "base")
    a.push([Update("refs/x/moved", base)])
    old = commit(b, "old")
    fresh = [commit(b, f"new {i}") for i in range(3)]
    with pytest.raises(StaleLease) as lost:
        b.push([Update("refs/x/new1", fresh[0]), Update("refs/x/moved", fresh[1], old=old),
                Update("refs/x/new2", fresh[2])])
    assert lost.value.stale == ("refs/x/moved",)
    assert set(lost.value.rejected) == {"refs/x/new1", "refs/x/moved", "refs/x/new2"}
    assert a.refs() == {"refs/x/moved": base}
    b.push([Update("refs/x/new1", fresh[0]), Update("refs/x/moved", fresh[1], old=base),
            Update("refs/x/new2", fresh[2])])
    assert a.refs() == {"refs/x/moved": fresh[1], "refs/x/new1": fresh[0], "refs/x/new2": fresh[2]}


def test_racing_creates_of_one_ref_have_exactly_one_winner(remote_url, tmp_path) -> None:
    racers = [Remote(remote_url, tmp_path / f"m{i}.git") for i in range(6)]
    commits = [commit(r, f"racer {i}") for i, r in enumerate(racers)]
    start, results = threading.Barrier(len(racers)), [None] * len(racers)

    def race(i: int) -> None:
        start.wait()
        try:
            racers[i].push([Update("refs/x/prize", commits[i])])
            results[i] = "won"
        except RefExists:
            results[i] = "lost"

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(racers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["lost"] * 5 + ["won"]
    assert racers[0].refs("refs/x/prize") == {"refs/x/prize": commits[results.index("won")]}
    assert fsck_served(served(remote_url, tmp_path))


def test_fetching_a_ref_the_remote_lacks_is_a_typed_error(two) -> None:
    a, _ = two
    with pytest.raises(MissingRef) as missing:
        a.fetch(["+refs/x/none:refs/x/none"])
    assert missing.value.ref == "refs/x/none"
    a.fetch(["+refs/x/*:refs/x/*"])  # a pattern matching nothing is no error


def test_a_stopped_daemon_is_unreachable_and_the_next_call_after_restart_succeeds(git_daemon, tmp_path) -> None:
    bare(git_daemon.base / "run.git")
    remote = Remote(git_daemon.url("run.git"), tmp_path / "m.git")
    first = commit(remote, "one")
    remote.push([Update("refs/x/a", first)])
    git_daemon.stop()
    second = commit(remote, "two", first)
    with pytest.raises(Unreachable) as down:
        remote.push([Update("refs/x/a", second, old=first)])
    assert git_daemon.url("run.git") in str(down.value)
    with pytest.raises(Unreachable):
        remote.fetch(["+refs/x/*:refs/x/*"])
    with pytest.raises(Unreachable):
        remote.refs()
    git_daemon.start()
    remote.push([Update("refs/x/a", second, old=first)])
    assert remote.refs() == {"refs/x/a": second}
    assert fsck_served(git_daemon.base / "run.git")


@pytest.mark.parametrize("said", ["fatal: expected flush after ref listing",
                                  "error: RPC failed; curl 56 unexpected disconnect while reading sideband packet",
                                  "fatal: the remote end hung up unexpectedly",
                                  "error: error in sideband demultiplexer\nerror: failed to push some refs to "
                                  "'git://127.0.0.1:9/run.git'"])
def test_a_connection_cut_mid_answer_is_unreachable(said: str) -> None:
    """What git says when the server dies in the middle of a call: retry later, like a refusal."""
    assert isinstance(classify("git://127.0.0.1:9/run.git", said + "\n"), Unreachable)


def test_no_repository_at_the_address(git_daemon, tmp_path) -> None:
    over_git = Remote(git_daemon.url("absent.git"), tmp_path / "a.git")
    over_file = Remote((tmp_path / "absent.git").as_uri(), tmp_path / "b.git")
    for remote in (over_git, over_file):
        with pytest.raises(NoRepository) as none:
            remote.push([Update("refs/x/a", commit(remote, "one"))])
        assert "git init --bare" in str(none.value)


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """An HTTP server that answers every request 401, as a git host refusing our credentials."""

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()
    server.server_close()


def test_refused_credentials_are_auth_failed_and_the_password_never_shown(refusing_server, tmp_path) -> None:
    for url in (f"http://{refusing_server}/run.git", f"http://alice:s3cret@{refusing_server}/run.git"):
        remote = Remote(url, tmp_path / "m.git")
        with pytest.raises(AuthFailed) as refused:
            remote.refs()
        with pytest.raises(AuthFailed):
            remote.push([Update("refs/x/a", commit(remote, "one"))])
        assert "s3cret" not in str(refused.value) and "s3cret" not in repr(remote)
        assert "git ls-remote" in str(refused.value)
    assert "s3cret" not in git(tmp_path / "m.git", "config", "--list")


def test_urls_are_masked_and_their_transport_named() -> None:
    assert mask("https://alice:s3cret@host/run.git") == "https://alice:***@host/run.git"
    assert mask("fatal: cannot reach ssh://bob:pw@h:22/r and https://h/r") == \
        "fatal: cannot reach ssh://bob:***@h:22/r and https://h/r"
    assert mask("git@github.com:org/run.git") == "git@github.com:org/run.git"
    assert [scheme(u) for u in ("file:///srv/run.git", "git://h/run.git", "ssh://h/r", "https://h/r",
                                "git@host:run.git", "host:run.git", "/srv/run.git", "./a:b")] == \
        ["file", "git", "ssh", "https", "ssh", "ssh", "file", "file"]
    with pytest.raises(BadInput, match="unknown transport 'ftp'"):
        scheme("ftp://alice:pw@h/r")
    with pytest.raises(BadInput) as bad:
        Remote("ftp://alice:pw@h/r", Path("/nonexistent/mirror"))
    assert "pw" not in str(bad.value)


def test_updates_must_name_full_refs_and_what_they_delete() -> None:
    with pytest.raises(ValueError, match="full ref"):
        Update("main", "a" * 40)
    with pytest.raises(ValueError, match="delete"):
        Update("refs/x/a", None)


def test_a_push_the_remote_refuses_for_another_reason_is_push_rejected(tmp_path) -> None:
    served_repo = bare(tmp_path / "hooked.git")
    hook = served_repo / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refused by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    remote = Remote(served_repo.as_uri(), tmp_path / "m.git")
    with pytest.raises(PushRejected) as refused:
        remote.push([Update("refs/x/a", commit(remote, "one"))])
    assert not isinstance(refused.value, StaleLease)
    assert set(refused.value.rejected) == {"refs/x/a"}
    assert remote.local("refs/x/a") is None


def race(pushes: list) -> list[BaseException | None]:
    """Run each push in its own thread, all at once; what each raised (None: it won)."""
    start, results = threading.Barrier(len(pushes)), [None] * len(pushes)

    def run(i: int) -> None:
        start.wait()
        try:
            pushes[i]()
        except PushRejected as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(pushes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_a_race_the_server_decides_is_a_lost_lease_too(remote_url, tmp_path) -> None:
    """A slow pre-receive hook lets both pushers pass git's client-side lease check, so the
    server's own ref transaction refuses the loser ("remote rejected"); that is still a
    typed lost lease, told from a plain refusal by the ref's value now."""
    hook = served(remote_url, tmp_path) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 0.3\n")
    hook.chmod(0o755)
    a, b = Remote(remote_url, tmp_path / "a.git"), Remote(remote_url, tmp_path / "b.git")
    ours, theirs = commit(a, "ours"), commit(b, "theirs")
    created = race([lambda: a.push([Update("refs/x/c", ours)]), lambda: b.push([Update("refs/x/c", theirs)])])
    assert sorted(type(r).__name__ for r in created) == ["NoneType", "RefExists"]
    assert "remote rejected" in next(r for r in created if r).rejected["refs/x/c"]
    winner = a.refs("refs/x/c")["refs/x/c"]
    for mirror in (a, b):
        mirror.fetch(["+refs/x/*:refs/x/*"])
    moved = [commit(a, "a2", winner), commit(b, "b2", winner)]
    leased = race([lambda: a.push([Update("refs/x/c", moved[0], old=winner),
                                   Update("refs/x/other", moved[0])]),
                   lambda: b.push([Update("refs/x/c", moved[1], old=winner)])])
    lost = next(r for r in leased if r)
    assert sorted(type(r).__name__ for r in leased) == ["NoneType", "StaleLease"]
    assert lost.stale == ("refs/x/c",) and lost.expected == winner
    assert a.refs("refs/x/c")["refs/x/c"] == moved[leased.index(None)]


def test_a_leased_delete_of_a_ref_already_gone_is_a_lost_lease(remote_url, tmp_path) -> None:
    """A delete leased on a value the ref no longer has, because the ref is gone, failed its
    lease: `StaleLease`, whether git's client-side check refuses it ("stale info": the ref was
    gone before the push) or the server's own transaction does ("remote rejected": two deleters
    raced past the client-side check, held by a slow hook); never a plain `PushRejected`."""
    a, b = Remote(remote_url, tmp_path / "a.git"), Remote(remote_url, tmp_path / "b.git")
    value = commit(a, "one")
    a.push([Update("refs/x/gone", value)])
    b.fetch(["+refs/x/*:refs/x/*"])
    a.push([Update("refs/x/gone", None, old=value)])
    with pytest.raises(StaleLease) as before:
        b.push([Update("refs/x/gone", None, old=value)])
    assert (before.value.ref, before.value.expected, before.value.stale) == ("refs/x/gone", value, ("refs/x/gone",))

    hook = served(remote_url, tmp_path) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 0.3\n")
    hook.chmod(0o755)
    a.push([Update("refs/x/raced", value)])
    b.fetch(["+refs/x/*:refs/x/*"])
    deleted = race([lambda: a.push([Update("refs/x/raced", None, old=value)]),
                    lambda: b.push([Update("refs/x/raced", None, old=value)])])
    lost = next(r for r in deleted if r)
    assert "remote rejected" in lost.rejected["refs/x/raced"]
    assert sorted(type(r).__name__ for r in deleted) == ["NoneType", "StaleLease"]
    assert (lost.ref, lost.expected, lost.stale) == ("refs/x/raced", value, ("refs/x/raced",))
    assert a.refs("refs/x/raced") == {}
