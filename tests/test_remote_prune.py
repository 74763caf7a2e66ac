"""Pruned claims on a real remote (file:// and a git daemon on loopback): the high-water mark
keeps numbers from being handed out twice once claims are deleted, a late push of a pruned
claim is refused, a takeover or a claim of a pruned number raises `ClaimPruned`, and a batch
claimed after another process's is numbered above it from the worker's look at the remote,
without a failed push. The deletes are the coordinator's: one leased atomic push
(`prune.gather`'s updates); the whole coordinator is run by `test_remote_run.py` and
`test_remote_restart.py`."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pygit2
import pytest
from conftest import git
from remote_fixture import fsck_served, pushed_refs, served
from test_remote_claims import TTL, Clock, results_of, worker

from gitswarm.core.events import Event
from gitswarm.core.remote_events import Pushed
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.ledger import Ledger
from gitswarm.memory import books
from gitswarm.memory.repo import Memory
from gitswarm.remote import highwater, layout
from gitswarm.remote.claims import Claim, ClaimHeld, ClaimLost, ClaimPruned, Claims
from gitswarm.remote.prune import REFUSALS
from gitswarm.remote.results import ResultPush
from gitswarm.remote.source import ClaimSource
from gitswarm.remote.transport import Remote, Update


@pytest.fixture
def clock() -> Clock:
    return Clock()


def prune(remote: Remote, episodes: list[str]) -> None:
    """Delete the episodes' claims and every worker's refs of them, each leased, in one push."""
    there = remote.refs()
    mine = [ref for ref in there if ref.startswith(layout.WORKERS) and any(f"/{e}" in ref for e in episodes)]
    claims = [layout.claim_ref(e) for e in episodes if layout.claim_ref(e) in there]
    remote.push([Update(ref, None, there[ref]) for ref in claims + mine])


def test_numbers_are_never_handed_out_again_once_their_claims_are_pruned(remote_url, tmp_path, clock) -> None:
    w1, w2 = worker(remote_url, tmp_path, "w1", clock), worker(remote_url, tmp_path, "w2", clock)
    first = w1.claim_next(["sum", "odd", "rev"], cap=100)
    w1.finish(first, [u for c in first for u in results_of(w1, c.episode)])
    marks = git(served(remote_url, tmp_path), "for-each-ref", "--format=%(refname) %(objectname)",
                layout.HIGH_WATER).split()
    assert marks == [highwater.ref_of(3), first[-1].id]  # the mark is the claim that raised it
    prune(w2.remote, ["e00001", "e00002", "e00003"])
    assert git(served(remote_url, tmp_path), "for-each-ref", layout.CLAIMS) == ""
    assert [c.episode for c in w2.claim_next(["sum"], cap=100)] == ["e00004"]  # a fresh look
    assert [c.episode for c in w1.claim_next(["sum"] * 2, cap=100)] == ["e00005", "e00006"]  # a stale one
    w3 = worker(remote_url, tmp_path, "w3", clock)
    with pytest.raises(ClaimPruned):
        w3.claim("e00002", "sum")  # pruned: never made again
    with pytest.raises(ClaimHeld):
        w3.claim("e00004", "sum")
    assert w2.claim_next(["sum"] * 4, cap=7) == [w2.read("e00007")]  # the cap counts pruned numbers too
    assert git(served(remote_url, tmp_path), "for-each-ref", "--format=%(refname)", layout.HIGH_WATER).split() \
        == [highwater.ref_of(7)]
    assert fsck_served(served(remote_url, tmp_path))


def test_a_late_push_of_a_pruned_claim_is_refused_and_nothing_retakes_it(remote_url, tmp_path, clock) -> None:
    """The slow holder's claim expired, another worker ran the episode and the coordinator
    pruned it: the slow one's results and renewals are refused (its lease names a claim commit
    the remote no longer has), and neither a takeover nor a claim brings the number back."""
    slow, fast = worker(remote_url, tmp_path, "slow", clock), worker(remote_url, tmp_path, "fast", clock)
    [held] = slow.claim_next(["sum"], cap=100)
    looked = Claims(Remote(remote_url, tmp_path / "look.git"), "look", ttl_s=TTL, clock=clock).read(held.episode)
    clock.now += TTL + 1
    rerun = fast.take_over(held)
    fast.finish([rerun], results_of(fast, held.episode))
    prune(fast.remote, [held.episode])
    with pytest.raises(ClaimLost):
        slow.finish([held], results_of(slow, held.episode))
    with pytest.raises(ClaimLost):
        slow.renew([held])
    taker = worker(remote_url, tmp_path, "taker", clock)
    with pytest.raises(ClaimPruned):
        taker.take_over(looked)  # an expired claim read before the prune
    with pytest.raises(ClaimPruned):
        taker.claim(held.episode, "sum")
    there = taker.remote.refs()
    assert layout.claim_ref(held.episode) not in there
    assert not any(ref.startswith(layout.worker_prefix("slow")) for ref in there)
    assert isinstance(taker.claim_next(["sum"], cap=100)[0], Claim)
    assert fsck_served(served(remote_url, tmp_path))


def test_a_batch_claimed_after_another_process_is_numbered_above_it_in_one_push(
        tmp_path: Path, memory: Memory, monkeypatch) -> None:
    """A worker's look at main and the stop (`ClaimSource._fetch`, one ls-remote) shows the
    high-water mark too, so after another process claimed, its next batch lands at once:
    one push and no second ls-remote, where a remembered mark cost a failed push and a look."""
    from gitswarm.remote.daemon import bare

    url = bare(tmp_path / "remote.git").as_uri()
    clock = Clock()
    mine = Claims(Remote(url, memory.path), "a", ttl_s=TTL, clock=clock)
    other = Claims(Remote(url, tmp_path / "b.git"), "b", ttl_s=TTL, clock=clock)
    mine.claim_next(["sum"], cap=100)
    other.claim_next(["sum"] * 2, cap=100)  # mine's remembered mark is stale now
    source = ClaimSource(mine.remote, mine, memory, None, {}, TTL)
    source._fetch()
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert [c.episode for c in mine.claim_next(["sum"] * 2, cap=100)] == ["e00004", "e00005"]
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert len(pushed_refs(trace)) == 1
    assert '"ls-remote"' not in trace.read_text()


def run_with_hook(tmp_path: Path, model_server: str, name: str, script: str) -> tuple[Path, Path]:
    """A run of a coordinator pruning two episodes a push and two workers, on a remote with
    hook `name`; each process ended with exit 0 and the run checked (`check_run`). The remote
    and the coordinator's mirror."""
    from test_remote_run import check_run, coordinator, finish, server_repo
    from test_remote_run import worker as worker_process

    remote = server_repo(tmp_path / "run.git")
    hook = remote / "hooks" / name
    hook.write_text(script)
    hook.chmod(0o755)
    url, mirror = remote.as_uri(), tmp_path / "mirror"
    coord = coordinator(url, mirror, model_server, "--prune-batch", "2")
    workers = [worker_process(url, tmp_path / n, n, model_server) for n in ("a", "b")]
    code, _, err = finish(coord)
    assert code == 0, err
    assert all(finish(w)[0] == 0 for w in workers)
    check_run(mirror, remote)
    return remote, mirror


@pytest.mark.slow
def test_a_remote_that_denies_deletes_keeps_its_refs_and_the_run_ends(tmp_path: Path, model_server: str) -> None:
    """A server whose pre-receive hook declines deleting a claim (a policy; git's own
    `receive.denyDeletes` covers only refs/heads/): every prune push is refused, pruning stops
    after `REFUSALS` of them (said in the event log), and the run ends as any other."""
    remote, mirror = run_with_hook(tmp_path, model_server, "pre-receive",
                                   "#!/bin/sh\nwhile read old new ref; do\n  case \"$new $ref\" in\n"
                                   "    0000000000000000000000000000000000000000\\ refs/gitswarm/claims/*) exit 1;;\n"
                                   "  esac\ndone\nexit 0\n")
    said = [json.loads(line)["data"] for line in (mirror / "gitswarm-events.jsonl").open()
            if json.loads(line)["kind"] == "prune_refused"]
    assert [e["again"] for e in said] == [True] * (REFUSALS - 1) + [False], said
    assert git(remote, "for-each-ref", layout.CLAIMS)  # kept


@pytest.mark.slow
def test_a_prune_whose_answer_was_lost_is_done_when_pushed_again(tmp_path: Path, model_server: str) -> None:
    """The server applies the coordinator's first prune push and dies before answering (its
    reference-transaction hook kills it once the deletes are committed): the push is
    `Unreachable`, the batch is pushed again and finds every ref gone, its leases failed
    (`StaleLease`). That batch is pruned, not stale: every episode is counted pruned once,
    and the run ends pruned as any other."""
    from test_remote_run import check_pruned

    remote, mirror = run_with_hook(
        tmp_path, model_server, "reference-transaction",
        "#!/bin/sh\nlines=$(cat)\n[ \"$1\" = committed ] || exit 0\n"
        "case \"$lines\" in\n  *\"0000000000000000000000000000000000000000 refs/gitswarm/claims/\"*)\n"
        "    [ -e answer-lost ] && exit 0\n    touch answer-lost\n    kill -9 $PPID;;\nesac\nexit 0\n")
    assert (remote / "answer-lost").exists()
    check_pruned(mirror, remote)
    events = [json.loads(line) for line in (mirror / "gitswarm-events.jsonl").open()]
    assert not [e for e in events if e["kind"] in ("prune_stale", "prune_refused")]
    pruned = [episode for e in events if e["kind"] == "pruned" for episode in e["data"]["episodes"]]
    episodes = {e for e in Ledger.load(Memory(mirror)).episodes if e != "merger"}
    assert sorted(pruned) == sorted(episodes)


def closed_elsewhere(tmp_path: Path, url: str, record: EpisodeRecord, process: str) -> str:
    """The coordinator's ledger once it took `record`'s episode in from `process`, written and
    sent to the server under a ref of its own (so a hook there can publish it), as its id."""
    coord = Remote(url, tmp_path / f"coord-{record.episode}.git")
    mirror = pygit2.Repository(str(coord.mirror))
    tip = books.put(mirror, "ledger", {record.path: asdict(replace(record, process=process))}, "ledger")
    coord.push([Update(f"refs/test/ledger-{record.episode}", tip)])
    return tip


def test_a_close_that_landed_with_its_answer_lost_and_was_pruned_is_not_a_lost_claim(
        tmp_path: Path, memory: Memory) -> None:
    """A worker's close lands and its answer is lost (a post-receive hook outlasts the client's
    timeout); before the worker tries again the coordinator takes the episode in, publishes
    its ledger and prunes the claim (the hook does it, as the server would see it). The retry
    finds the claim gone, but the run's ledger has the episode from this process: its results
    landed, said `pushed`, not `claim_lost`. A claim another process closed and got pruned is
    still lost."""
    from gitswarm.remote.daemon import bare

    served_repo = bare(tmp_path / "remote.git")
    url, clock = served_repo.as_uri(), Clock()
    # The client's timeout is short of the hook's sleep (below), and long enough that a loaded
    # machine's ordinary fetch fits in it (0.3 s did not, once, under a full suite beside it).
    claims = Claims(Remote(url, memory.path, timeout_s=2.0), "w", ttl_s=TTL, clock=clock)
    events: list[Event] = []
    results = ResultPush(claims.remote, claims, memory, events.append)
    [mine, theirs] = claims.claim_next(["sum", "sum"], cap=100)
    ledger = Ledger()
    records = [EpisodeRecord(c.episode, "w-w01", "sum", status="abstain", tokens_in=10) for c in (mine, theirs)]
    for record in records:
        ledger.changed(record)
    ledger.flush(memory)

    tip = closed_elsewhere(tmp_path, url, records[0], "w")
    hook = served_repo / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\n[ -e lose-answer ] || exit 0\nrm lose-answer\n"
                    f"git update-ref refs/gitswarm/ledger {tip}\n"
                    f"git update-ref -d {layout.claim_ref(mine.episode)}\nsleep 4\n")
    hook.chmod(0o755)
    (served_repo / "lose-answer").touch()
    held = {mine.episode: mine}
    results.push([records[0]], held)
    assert [e.kind for e in events] == ["push_failed", "pushed"], events
    assert isinstance(events[-1], Pushed) and events[-1].episodes == [mine.episode] and held == {}
    assert layout.claim_ref(mine.episode) not in claims.remote.refs()

    events.clear()  # the other claim: taken over after it expired, closed by its taker, pruned
    clock.now += TTL + 1
    other = worker(url, tmp_path, "x", clock)
    other.finish([other.take_over(theirs)])
    tip = closed_elsewhere(tmp_path, url, records[1], "x")
    prune(other.remote, [theirs.episode])
    git(served_repo, "update-ref", "refs/gitswarm/ledger", tip)  # published: it has the taker's record
    held = {theirs.episode: theirs}
    results.push([records[1]], held)
    assert [e.kind for e in events] == ["claim_lost"], events
    assert held == {}
