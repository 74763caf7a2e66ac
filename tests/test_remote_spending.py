"""The token and USD caps across machines, on a real remote: open claims carry what their
holders have spent, the coordinator adds them to its ledger, and a worker's cap check adds
the rest of the run's spending (as the coordinator published it) to its own. The problems
the coordinator set aside reach the workers the same way."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitswarm.core.stops import StopReason
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.kernel import caps_check
from gitswarm.engine.ledger import Ledger
from gitswarm.engine.runview import RunView
from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.remote import publish
from gitswarm.remote.claimcommit import HOLDINGS, ClaimGivenUp
from gitswarm.remote.claims import Claim, Claims
from gitswarm.remote.coordinator import OWN_REFS
from gitswarm.remote.daemon import bare
from gitswarm.remote.publish import RunStreaks
from gitswarm.remote.source import ClaimSource
from gitswarm.remote.spending import Published, Spending
from gitswarm.remote.transport import Remote
from gitswarm.remote.worker import join
from gitswarm.usage import Usage


def claims(url: str, tmp_path: Path, name: str) -> Claims:
    return Claims(Remote(url, tmp_path / f"{name}.git"), name, ttl_s=600)


def finished(episode: str, process: str, tokens: int, usd: float) -> EpisodeRecord:
    return EpisodeRecord(episode, f"{process}-w01", "sum", status="abstain", tokens_in=tokens, cost_usd=usd,
                         process=process)


def test_the_count_adds_the_open_claims_reports_to_the_ledger(tmp_path: Path):
    url = f"file://{bare(tmp_path / 'run.git')}"
    a, b, seen_by = claims(url, tmp_path, "a"), claims(url, tmp_path, "b"), claims(url, tmp_path, "coordinator")
    [held_a] = a.claim_next(["sum"], 10)
    [held_b] = b.claim_next(["sum"], 10)
    [held_a] = a.renew([held_a], {held_a.episode: (1000, 0.5)})
    b.renew([held_b], {held_b.episode: (300, 0.1)})
    ledger = Ledger()
    ledger.changed(finished("e00009", "b", 250, 0.05))
    spending = Spending.of(ledger.episodes.values())

    assert spending.seen(seen_by.all().values(), 0.0)
    assert spending.total(ledger) == (1550, pytest.approx(0.65))
    published = spending.record(ledger)
    assert published["processes"]["a"] == {"tokens": 1000, "usd": 0.5, "held": 1, "expired": 0,
                                           "problems": {"sum": 1}}
    assert Published("a", published).busy() == ["sum"]  # b's episode: a works on it knowing
    assert Published("a", published).elsewhere() == (550, pytest.approx(0.15))  # b's open claim and record
    assert Published("b", published).elsewhere() == (1000, pytest.approx(0.5))
    assert Published("c", published).elsewhere() == (1550, pytest.approx(0.65))  # a process not yet counted

    a.finish([held_a], spent={held_a.episode: (1200, 0.6)})  # closed with its final figures
    found = seen_by.all()
    assert (found[held_a.episode].done, found[held_a.episode].tokens) == (True, 1200)
    assert spending.seen(found.values(), 0.0)  # a's claim is no longer open ...
    record = finished(held_a.episode, "a", 1200, 0.6)
    spending.took(record)  # ... and its record is in the ledger: counted once
    ledger.changed(record)
    assert spending.total(ledger) == (1750, pytest.approx(0.75))
    assert not spending.seen(seen_by.all().values(), 0.0)


def test_a_workers_cap_check_counts_the_rest_of_the_run(tmp_path: Path, problem_dir: Path):
    cfg = SolveConfig(problems=problem_dir, run=tmp_path / "w", model="openai/m", max_total_tokens=1000)
    mine, view = Ledger(), RunView(["sum"])
    record = EpisodeRecord("e00001", "a-w01", "sum", tokens_in=399)
    mine.changed(record)
    published = Published("a", {"tokens": 700, "usd": 0.0, "processes": {"a": {"tokens": 100, "usd": 0.0}}})
    check = caps_check(cfg, mine, view, published.elsewhere)
    assert check() is None  # 399 of its own and 600 elsewhere: below the cap
    assert view.tokens == 999
    mine.charge(record, Usage(tokens_in=1))
    reached = check()
    assert reached is not None and reached.reason is StopReason.TOKEN_CAP
    assert caps_check(cfg, mine, view)() is None  # alone it is far from the cap


def published(tmp_path: Path, memory: Memory, problem_dir: Path) -> tuple[str, SolveConfig]:
    """A bare remote and the run's settings written on `memory` (pushed by the caller)."""
    url = bare(tmp_path / "remote.git").as_uri()
    cfg = SolveConfig(problems=problem_dir, run=memory.path, model="openai/m")
    publish.write_settings(memory, publish.settings_of(cfg, load_set(problem_dir), ["sum"], 600))
    return url, cfg


def test_a_worker_looks_less_often_while_the_run_stands_still(tmp_path: Path, memory: Memory, problem_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    """A worker's refresh (an ls-remote of main, the ledger, the stop and the mark) is asked
    for every tenth of a second, as a worker's loop asks while its episodes wait on the model:
    while nothing moves its looks back off from `POLL_S` to `IDLE_S`; once main moves, the
    next look sees it and they are quick again."""
    import anyio
    from remote_fixture import git_commands

    from gitswarm.domain.index import MemoryIndex
    from gitswarm.engine.events import EventLog
    from gitswarm.engine.runview import RunView
    from gitswarm.engine.shared import Shared
    from gitswarm.memory.store import Store

    url, cfg = published(tmp_path, memory, problem_dir)
    publisher = publish.Publisher(Remote(url, memory.path), OWN_REFS)
    publisher.push(OWN_REFS)
    folder, trace = tmp_path / "w", tmp_path / "trace"
    remote = Remote(url, folder)
    settings = join(remote, "w")
    worker = Memory(folder)
    shared = Shared(Store(worker), MemoryIndex(), RunView(["sum"]), cfg, None, EventLog(folder, []),
                    anyio.CapacityLimiter(1), lambda: None, Ledger())
    source = ClaimSource(remote, Claims(remote, "w", ttl_s=600), worker, shared, settings, 600)
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))

    async def ask(seconds: float) -> list[float]:
        waits, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            assert await source.refresh() is None
            if not waits or waits[-1] != source.pace.wait_s:
                waits.append(source.pace.wait_s)
            await anyio.sleep(0.1)
        return waits

    assert anyio.run(ask, 6.0) == [0.2, 0.4, 0.8, 1.6, 2.0]  # the first look is new
    looks = git_commands(trace)["ls-remote"]
    assert 4 <= looks <= 8  # looking every POLL_S it would have made 30
    memory.commit_to_main({"problems/sum/SUMMARY.md": b"moved\n"}, "summary moved", commitmeta.Other(op="op-moved"))
    publisher.push(OWN_REFS)
    assert 0.2 in anyio.run(ask, 2.5)  # seen within IDLE_S, and quick again


def test_a_worker_reads_the_spending_busy_and_set_aside_problems(tmp_path: Path, memory: Memory, problem_dir: Path):
    """What the coordinator's ledger publishes reaches a worker's cap check and scheduler: the
    run's spending by process, the problems other processes work on now, and the problems the
    no-progress rule set aside (the run's
    streaks span every worker's episodes; a worker keeps none of its own)."""
    url, cfg = published(tmp_path, memory, problem_dir)
    ledger = Ledger(set_aside=["sum"])
    ledger.spending = {"tokens": 900, "usd": 0.0, "processes": {"a": {"tokens": 100, "usd": 0.0},
                                                                "b": {"problems": {"sum": 2}}}}
    ledger.changed(finished("e00001", "b", 800, 0.0))
    ledger.flush(memory)
    publisher = publish.Publisher(Remote(url, memory.path), OWN_REFS)
    publisher.push(OWN_REFS)

    folder = tmp_path / "a"
    remote = Remote(url, folder)
    settings = join(remote, "a")
    spending, streaks = Published("a"), RunStreaks(cfg.no_progress)
    source = ClaimSource(remote, Claims(remote, "a", ttl_s=600), Memory(folder), None, settings, 600,
                         spending=spending, streaks=streaks)
    assert source._fetch()
    assert spending.elsewhere() == (800, 0.0)
    assert source.elsewhere() == ["sum", "sum"]  # the scheduler counts them as busy
    assert streaks.set_aside == {"sum"}
    assert not streaks.add(finished("e00002", "a", 0, 0.0)) and streaks.set_aside == {"sum"}


def test_a_holding_taken_over_keeps_its_spending_in_the_count(tmp_path: Path):
    """A dead worker's claim never closes: once another takes it over, what the dead holding
    had reported stays counted (no record will hold it), and a restarted coordinator keeps it."""
    url = f"file://{bare(tmp_path / 'run.git')}"
    dead, live = Claims(Remote(url, tmp_path / "dead.git"), "dead", ttl_s=0.01), claims(url, tmp_path, "live")
    seen_by = claims(url, tmp_path, "coordinator")
    [held] = dead.claim_next(["sum"], 10)
    dead.renew([held], {held.episode: (4000, 2.0)})
    ledger = Ledger()
    spending = Spending.of(ledger.episodes.values())
    spending.seen(seen_by.all().values(), 0.0)
    assert spending.total(ledger) == (4000, 2.0)

    time.sleep(0.05)  # the dead worker's claim expires: it stopped renewing
    ours = live.take_over(seen_by.all()[held.episode])
    assert spending.seen(seen_by.all().values(), 0.0)
    assert [(h.episode, h.worker, h.tokens) for h in spending.taken_over] == [(held.episode, "dead", 4000)]
    assert spending.total(ledger) == (4000, 2.0)  # the new holding reports 0 so far: the old 4,000 stay
    assert spending.abandoned_holdings() == 1  # one episode cut off, for the episode cap
    live.finish([ours], spent={ours.episode: (500, 0.25)})
    spending.seen(seen_by.all().values(), 0.0)
    record = finished(ours.episode, "live", 500, 0.25)
    spending.took(record)
    ledger.changed(record)
    assert spending.total(ledger) == (4500, 2.25)
    assert not spending.taken_over and not spending.seen(seen_by.all().values(), 0.0)  # counted once

    published = spending.record(ledger)
    assert published["tokens"] == 4500 and "dead" not in published["processes"]
    assert Published("dead", published).elsewhere() == (4500, 2.25)  # restarted under its name: still counted
    again = Spending.of(ledger.episodes.values(), published)  # a restarted coordinator
    again.seen(seen_by.all().values(), 0.0)
    assert again.total(ledger) == (4500, 2.25) and again.abandoned_holdings() == 1


def held_until_given_up(url: str, tmp_path: Path, seen_by: Claims, spending: Spending,
                        usd: float = 0.0) -> tuple[Claim, Claims]:
    """One episode held `HOLDINGS` times in turn, the n-th holding reporting 100 n tokens and
    `usd` n dollars and then expiring (its worker died, or is slow), each seen by `spending`;
    the last holding and its holder."""
    [held] = Claims(Remote(url, tmp_path / "w1.git"), "w1", ttl_s=0.01).claim_next(["sum"], 10)
    for n in range(1, HOLDINGS + 1):
        holder = Claims(Remote(url, tmp_path / f"w{n}.git"), f"w{n}", ttl_s=0.01)
        [held] = holder.renew([held], {held.episode: (100 * n, usd * n)})
        spending.seen(seen_by.all().values(), 0.0)
        time.sleep(0.05)  # its claim expires
        if n < HOLDINGS:
            nxt = Claims(Remote(url, tmp_path / f"w{n + 1}.git"), f"w{n + 1}", ttl_s=0.01)
            held = nxt.take_over(seen_by.all()[held.episode])
    return held, holder


def test_an_episode_whose_holders_all_die_is_given_up(tmp_path: Path):
    """Each holding of one episode expires in turn (its worker died): after `HOLDINGS` of them
    nobody may take it over, and the coordinator counts every holding's spending once, the
    given-up one too, and no longer counts it as open or waiting for a taker."""
    url = f"file://{bare(tmp_path / 'run.git')}"
    seen_by = claims(url, tmp_path, "coordinator")
    spending, ledger = Spending(), Ledger()
    held, _ = held_until_given_up(url, tmp_path, seen_by, spending)  # each holder died
    with pytest.raises(ClaimGivenUp):
        claims(url, tmp_path, "late").take_over(seen_by.all()[held.episode])
    assert spending.seen(seen_by.all().values(), time.time())
    assert [c.generation for c in spending.newly_given_up] == [HOLDINGS]
    assert spending.total(ledger) == (100 + 200 + 300, 0.0) and spending.abandoned_holdings() == HOLDINGS
    published = spending.record(ledger)
    assert Published("late", published).expired() == 0  # nothing waits for a taker
    assert not spending.seen(seen_by.all().values(), time.time())  # counted once
    again = Spending.of([], published)  # a restarted coordinator counts it once too
    again.seen(seen_by.all().values(), time.time())
    assert again.total(ledger) == (600, 0.0) and not again.newly_given_up


def test_a_given_up_episode_its_slow_holder_closes_late_is_counted_once(tmp_path: Path):
    """The episode's last allowed holding expires and it is given up, that holding's report
    counted as abandoned; but its holder was slow, not dead, and closes the claim after (nobody
    took it over, so its lease holds). The coordinator takes the episode in, and its record
    holds what the holding spent: the abandoned share goes, the holding no longer counts as cut
    off, and a coordinator restarted before or after the close counts it once too."""
    url = f"file://{bare(tmp_path / 'run.git')}"
    seen_by = claims(url, tmp_path, "coordinator")
    spending, ledger = Spending(), Ledger()
    held, holder = held_until_given_up(url, tmp_path, seen_by, spending, usd=0.1)
    assert spending.seen(seen_by.all().values(), time.time())
    assert [c.generation for c in spending.newly_given_up] == [HOLDINGS]
    assert spending.total(ledger) == (600, pytest.approx(0.6)) and spending.abandoned_holdings() == HOLDINGS
    before_close = spending.record(ledger)  # published before the close

    holder.finish([held], spent={held.episode: (350, 0.35)})  # the slow holder closes it after all
    record = finished(held.episode, f"w{HOLDINGS}", 350, 0.35)
    assert not spending.seen(seen_by.all().values(), time.time())
    spending.took(record)
    ledger.changed(record)
    assert spending.total(ledger) == (100 + 200 + 350, pytest.approx(0.65))  # the 300 reported: in the record
    assert spending.abandoned_holdings() == HOLDINGS - 1  # the last holding ran to its end
    published = spending.record(ledger)
    assert published["tokens"] == 650

    after = Spending.of(ledger.episodes.values(), published)  # restarted after the take-in
    after.seen(seen_by.all().values(), time.time())
    assert after.total(ledger) == (650, pytest.approx(0.65)) and after.abandoned_holdings() == HOLDINGS - 1
    assert after.record(ledger) == published

    again = Spending.of([], before_close)  # restarted before it: the episode is taken in by the new process
    again.seen(seen_by.all().values(), time.time())
    again.took(record)
    assert again.total(ledger) == (650, pytest.approx(0.65)) and again.abandoned_holdings() == HOLDINGS - 1
