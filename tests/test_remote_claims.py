"""Claims on a real remote (file:// and a git daemon on loopback): one holder per episode,
racing claimers and takers with exactly one winner, expiry and takeover, renewal, results
closed with their claim in one atomic push, a late holder recognised, the server restarting."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import git
from remote_fixture import commit, fsck_served, served

from gitswarm.errors import BadInput
from gitswarm.memory.trailers import parse
from gitswarm.remote import layout
from gitswarm.remote.claims import Claim, ClaimHeld, ClaimLost, Claims
from gitswarm.remote.daemon import bare
from gitswarm.remote.errors import RefExists, StaleLease, Unreachable
from gitswarm.remote.transport import Remote, Update

TTL = 600.0


class Clock:
    """The wall clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def worker(url: str, tmp_path: Path, name: str, clock: Clock) -> Claims:
    """Worker `name` with its own mirror, as on its own machine."""
    return Claims(Remote(url, tmp_path / f"{name}.git"), name, ttl_s=TTL, clock=clock)


def together(calls: list) -> list:
    """Run the calls at once, each in its own thread; each one's result or exception."""
    start, results = threading.Barrier(len(calls)), [None] * len(calls)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = calls[i]()
        except (ClaimHeld, ClaimLost) as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_a_claim_is_held_until_it_expires_then_taken_over(remote_url, tmp_path, clock) -> None:
    w1, w2 = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w2", clock)
    first = w1.claim("e00001", "sum")
    assert (first.worker, first.generation, first.op, first.expires) == ("w1", 1, "claim-e00001-1", clock.now + TTL)
    with pytest.raises(ClaimHeld) as held:
        w2.claim("e00001", "odd")
    assert held.value.holder == first
    assert "claimed by w1" in str(held.value)
    clock.now += TTL
    second = w2.claim("e00001", "odd")
    assert (second.worker, second.problem, second.generation, second.op) == ("w2", "sum", 2, "claim-e00001-2")
    assert w1.read("e00001") == second
    served_repo = served(remote_url, tmp_path)
    history = git(served_repo, "log", "--format=%an %(trailers:key=Gitswarm-Claim,valueonly)",
                  layout.claim_ref("e00001")).split()
    assert list(zip(history[::2], history[1::2], strict=True)) == [("w2", "claim-e00001-2"), ("w1", "claim-e00001-1")]
    assert fsck_served(served_repo)


def test_the_claim_commit_records_worker_time_expiry_and_problem(remote_url, tmp_path, clock) -> None:
    claim = worker(remote_url, tmp_path, "w1", clock).claim("e00007", "rev")
    served_repo = served(remote_url, tmp_path)
    record = json.loads(git(served_repo, "show", f"{layout.claim_ref('e00007')}:claim.json"))
    assert record["worker"] == "w1" and record["problem"] == "rev" and record["episode"] == "e00007"
    assert (record["claimed"], record["expires"], record["done"]) == (clock.now, clock.now + TTL, False)
    message = git(served_repo, "log", "-1", "--format=%B", claim.id)
    assert parse(message) == {"Episode": "e00007", "Worker": "w1", "Problem": "rev", "Claim": "claim-e00007-1"}
    assert "until 2023-11-14T22:23:20Z" in message


def test_racing_claimers_of_one_episode_have_exactly_one_winner(remote_url, tmp_path, clock) -> None:
    workers = [worker(remote_url, tmp_path, f"w{i}", clock) for i in range(5)]
    results = together([lambda w=w: w.claim("e00001", "sum") for w in workers])
    won = [r for r in results if isinstance(r, Claim)]
    assert len(won) == 1
    assert all(isinstance(r, ClaimHeld) and r.holder == won[0] for r in results if r is not won[0])
    assert workers[0].read("e00001") == won[0]


def test_racing_takers_of_an_expired_claim_have_exactly_one_winner(remote_url, tmp_path, clock) -> None:
    dead = worker(remote_url, tmp_path, "dead", clock).claim("e00001", "sum")
    clock.now += TTL + 1
    takers = [worker(remote_url, tmp_path, f"t{i}", clock) for i in range(5)]
    results = together([lambda t=t: t.take_over(dead) for t in takers])
    won = [r for r in results if isinstance(r, Claim)]
    assert len(won) == 1 and won[0].generation == 2
    assert all(isinstance(r, ClaimHeld) and r.holder == won[0] for r in results if r is not won[0])
    assert git(served(remote_url, tmp_path), "rev-parse", f"{won[0].id}^") == f"{dead.id}\n"


def test_a_renewal_keeps_the_holding_and_fails_once_taken_over(remote_url, tmp_path, clock) -> None:
    w1, w2 = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w2", clock)
    claim = w1.claim("e00001", "sum")
    clock.now += TTL - 1
    [renewed] = w1.renew([claim], {"e00001": (1200, 0.25)})
    assert (renewed.op, renewed.claimed, renewed.expires) == (claim.op, claim.claimed, clock.now + TTL)
    assert (renewed.tokens, renewed.usd) == (1200, 0.25) and w2.read("e00001") == renewed
    clock.now += TTL - 1
    with pytest.raises(ClaimHeld):
        w2.claim("e00001", "sum")  # the renewal holds where the first claim would have expired
    clock.now += 1
    taken = w2.claim("e00001", "sum")
    with pytest.raises(ClaimLost) as lost:
        w1.renew([renewed])
    assert lost.value.lost == (renewed,)
    assert w2.read("e00001") == taken and (taken.tokens, taken.usd) == (0, 0.0)  # a holding reports its own


def results_of(claims: Claims, episode: str) -> list[Update]:
    """A result branch and its op ref, under the worker's own refs."""
    result = commit(claims.remote, f"{claims.worker} {episode}")
    return [Update(layout.worker_ref(claims.worker, f"refs/heads/swarm/{episode}"), result),
            Update(layout.worker_ref(claims.worker, f"refs/gitswarm/ops/{episode}-final"), result)]


def test_finish_closes_the_claim_with_the_results_and_a_late_holder_pushes_nothing(
        remote_url, tmp_path, clock) -> None:
    w1, w2 = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w2", clock)
    slow = w1.claim("e00001", "sum")
    clock.now += TTL
    rerun = w2.claim("e00001", "sum")
    [done] = w2.finish([rerun], results_of(w2, "e00001"))
    assert done.done and done.op == "claim-e00001-2"
    with pytest.raises(ClaimLost) as late:
        w1.finish([slow], results_of(w1, "e00001"))
    assert late.value.lost == (slow,)
    remote_refs = w1.remote.refs()
    assert sorted(remote_refs) == [layout.claim_ref("e00001"), f"{layout.HIGH_WATER}e00001",
                                   "refs/gitswarm/workers/w2/gitswarm/ops/e00001-final",
                                   "refs/gitswarm/workers/w2/heads/swarm/e00001"]
    clock.now += 10 * TTL
    with pytest.raises(ClaimHeld, match="done"):
        worker(remote_url, tmp_path, "w3", clock).claim("e00001", "sum")  # a closed claim never expires
    assert fsck_served(served(remote_url, tmp_path))


def test_a_batch_of_finishes_is_one_push_and_a_lost_claim_in_it_is_named(remote_url, tmp_path, clock) -> None:
    w1, w2 = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w2", clock)
    held = [w1.claim(f"e0000{n}", "sum") for n in (1, 2, 3)]
    clock.now += TTL
    w2.claim("e00002", "sum")
    updates = [u for c in held for u in results_of(w1, c.episode)]
    with pytest.raises(ClaimLost) as lost:
        w1.finish(held, updates)
    assert [c.episode for c in lost.value.lost] == ["e00002"]
    assert not any(ref.startswith(layout.WORKERS) for ref in w1.remote.refs())
    kept = [c for c in held if c not in lost.value.lost]
    done = w1.finish(kept, [u for c in kept for u in results_of(w1, c.episode)])
    assert [c.episode for c in done] == ["e00001", "e00003"]
    claims = w2.all()
    assert {e: (c.worker, c.done) for e, c in claims.items()} == \
        {"e00001": ("w1", True), "e00002": ("w2", False), "e00003": ("w1", True)}


def test_a_stale_lease_on_a_workers_own_ref_is_not_a_lost_claim(remote_url, tmp_path, clock) -> None:
    """Two processes started with one worker name: the second's push fails on the first's ref."""
    first, twin = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w1-twin", clock)
    twin.worker = "w1"
    first.finish([first.claim("e00001", "sum")], results_of(first, "e00001")[:1])
    mine = twin.claim("e00002", "sum")
    clash = Update(layout.worker_ref("w1", "refs/heads/swarm/e00001"), commit(twin.remote, "twin"))
    with pytest.raises(StaleLease) as stale:
        twin.finish([mine], [clash])
    assert isinstance(stale.value, RefExists) and stale.value.ref == clash.ref
    assert twin.read("e00002") == mine  # the claim stays open


def test_claim_next_hands_out_distinct_episodes_up_to_the_cap(remote_url, tmp_path, clock) -> None:
    workers = [worker(remote_url, tmp_path, f"w{i}", clock) for i in range(3)]

    def claim_all(w: Claims, batch: int) -> list[str]:
        got = []
        while claims := w.claim_next(["sum"] * batch, cap=11):
            got += [c.episode for c in claims]
        return got

    results = together([lambda w=w, k=k: claim_all(w, k) for w, k in zip(workers, (1, 2, 3), strict=True)])
    everything = [e for got in results for e in got]
    assert sorted(everything) == [f"e{n:05d}" for n in range(1, 12)]
    assert workers[0].claim_next(["sum"], cap=11) == []
    assert len(workers[0].all()) == 11


def test_claim_next_claims_a_batch_in_one_push_and_stops_at_the_cap(remote_url, tmp_path, clock) -> None:
    w1, w2 = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w2", clock)
    w2.claim("e00002", "rev")  # taken out of order: the batch goes above it, leaving e00001
    batch = w1.claim_next(["sum", "odd", "rev"], cap=4)
    assert [(c.episode, c.problem) for c in batch] == [("e00003", "sum"), ("e00004", "odd")]
    served_repo = served(remote_url, tmp_path)
    assert git(served_repo, "rev-parse", "refs/gitswarm/claims/e00003", "refs/gitswarm/claims/e00004").split() \
        == [c.id for c in batch]
    assert w1.claim_next(["sum"], cap=4) == []


def test_claims_go_on_after_the_daemon_restarts(git_daemon, tmp_path, clock) -> None:
    bare(git_daemon.base / "run.git")
    w1 = worker(git_daemon.url("run.git"), tmp_path, "w1", clock)
    first = w1.claim("e00001", "sum")
    git_daemon.stop()
    with pytest.raises(Unreachable):
        w1.claim("e00002", "sum")
    with pytest.raises(Unreachable):
        w1.renew([first])
    git_daemon.start()
    second = w1.claim("e00002", "sum")
    w1.finish([*w1.renew([first]), second], results_of(w1, "e00001"))
    assert {e: c.done for e, c in w1.all().items()} == {"e00001": True, "e00002": True}
    assert fsck_served(git_daemon.base / "run.git")


def test_a_workers_local_refs_map_to_its_own_prefix_and_back() -> None:
    for local in ("refs/heads/swarm/e00001", "refs/gitswarm/ops/e00001-final", "refs/gitswarm/ledger",
                  "refs/notes/transcripts"):
        remote_ref = layout.worker_ref("w1", local)
        assert remote_ref.startswith("refs/gitswarm/workers/w1/")
        assert layout.local_ref(remote_ref) == ("w1", local)
    assert layout.local_ref(layout.claim_ref("e00001")) is None
    assert layout.episode_of(layout.claim_ref("e00001")) == "e00001"
    for bad in ("../w2", "w1/heads", ""):
        with pytest.raises(BadInput, match="invalid worker"):
            layout.worker_ref(bad, "refs/heads/main")
    with pytest.raises(ValueError, match="full ref"):
        layout.worker_ref("w1", "heads/main")


def landed(remote: Remote, ref: str, value: str | None = None) -> bool:
    """Wait until the remote's `ref` exists (and is `value`): the killed push's server side
    goes on after the client gave up."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = remote.refs(ref).get(ref)
        if now is not None and value in (None, now):
            return True
        time.sleep(0.05)
    return False


def test_a_push_whose_answer_was_lost_is_still_ours(remote_url, tmp_path, clock) -> None:
    """A post-receive hook outlasts the client's timeout: the refs move, the answer is lost
    (`Unreachable`). Claiming and finishing again find our own commit and go on."""
    hook = served(remote_url, tmp_path) / "hooks" / "post-receive"
    w1 = Claims(Remote(remote_url, tmp_path / "w1.git", timeout_s=0.3), "w1", ttl_s=TTL, clock=clock)
    reader = Remote(remote_url, tmp_path / "reader.git")
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 1\n")
    hook.chmod(0o755)
    with pytest.raises(Unreachable):
        w1.claim("e00001", "sum")
    hook.unlink()
    assert landed(reader, layout.claim_ref("e00001"))
    claim = w1.claim("e00001", "sum")
    assert (claim.worker, claim.generation, claim.id) == ("w1", 1, reader.refs()[layout.claim_ref("e00001")])
    results = results_of(w1, "e00001")
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 1\n")
    hook.chmod(0o755)
    with pytest.raises(Unreachable):
        w1.finish([claim], results)
    hook.unlink()
    assert landed(reader, results[0].ref)
    [done] = w1.finish([claim], results)
    assert done.done and w1.read("e00001") == done
    assert {u.ref: u.new for u in results}.items() <= reader.refs().items()
