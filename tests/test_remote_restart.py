"""The coordinator of a run on a git remote killed and started again, through the real CLI
(`gitswarm solve SET --run URL --workers 0` and `gitswarm worker` processes, the demo's
scripted model behind one fake server process): the workers go on without it, and the
restarted one resumes from its mirror as a local run resumes from its folder. The run must
then finish with nothing lost or duplicated (`check_run`, `check_claims`)."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest
from conftest import git
from test_remote_faults import all_end_cleanly, check_claims, events, processes, wait_until
from test_remote_run import check_pruned, check_run, coordinator, server_repo, worker

from gitswarm.core.event_types import Abstained, Committed, Failed, Nominated, RunStarted
from gitswarm.engine.events import read_events
from gitswarm.remote import layout

pytestmark = pytest.mark.slow
RUN_S = 120
PRUNE = ("--prune-batch", "2")
"""Claims and worker refs pruned two episodes at a time: the coordinator is killed after a prune."""
TAKEN_IN = (Committed, Nominated, Abstained, Failed)
"""The coordinator's events for an episode it took into the run's ledger."""


def taken_in(mirror: Path) -> list[str]:
    """The episodes the coordinator's event log says it took in, in order (both its lives)."""
    return [e.episode for e in read_events(mirror) if isinstance(e, TAKEN_IN) and e.process is not None]


def closed_claims(remote: Path) -> set[str]:
    """The episodes whose claims are closed on the remote, read with plain git."""
    out = git(remote, "for-each-ref", "--format=%(refname) %(contents:subject)", layout.CLAIMS)
    return {line.split()[0].rsplit("/", 1)[1] for line in out.splitlines() if line.split()[1:2] == ["done:"]}


def ledger_records(mirror: Path) -> set[str]:
    """The episodes the coordinator's ledger holds, as its mirror has it now."""
    if not (mirror / "HEAD").exists() or not git(mirror, "for-each-ref", "refs/gitswarm/ledger"):
        return set()
    names = git(mirror, "ls-tree", "-r", "--name-only", "refs/gitswarm/ledger", "episodes/").split()
    return {Path(n).stem for n in names} - {"merger"}


def test_the_coordinator_killed_mid_run_and_started_again(tmp_path: Path, model_server: str):
    """SIGKILL the coordinator just as it takes an episode in (at times before its ledger
    has it): the workers keep claiming and pushing; the same command started again resumes
    from its ledger, takes in what it had not recorded and what was pushed meanwhile, and
    ends the run: every closed claim in the ledger once, under its closer, each op once,
    every adopted commit on main. Pruning goes on the while: the first life prunes before it
    is killed, and the second takes none of the pruned episodes in again."""
    remote = server_repo(tmp_path / "run.git")
    url = remote.as_uri()
    mirror = tmp_path / "mirror"
    with processes(coordinator(url, mirror, model_server, *PRUNE)) as running:
        running += [worker(url, tmp_path / name, name, model_server) for name in ("a", "b")]
        wait_until("two episodes in the coordinator's ledger", lambda: len(ledger_records(mirror)) >= 2)
        wait_until("a batch pruned", lambda: events(mirror, "pruned"))
        seen = len(taken_in(mirror))
        wait_until("another episode taken in", lambda: len(taken_in(mirror)) > seen)
        running[0].send_signal(signal.SIGKILL)
        running[0].wait(timeout=10)
        kept, said = ledger_records(mirror), set(taken_in(mirror))
        wait_until("a worker's results pushed while the coordinator is down",
                   lambda: closed_claims(remote) - said)
        pruned = {e for batch in events(mirror, "pruned") for e in batch["episodes"]}
        running[0] = coordinator(url, mirror, model_server, *PRUNE)
        all_end_cleanly(running, RUN_S)
    check_run(mirror, remote)
    check_claims(remote, mirror)
    check_pruned(mirror, remote)
    assert not pruned & set(taken_in(mirror)[len(said):])  # a pruned episode is never taken in again
    starts = [e for e in read_events(mirror) if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[1].episodes == len(kept), (starts, kept)  # resumed
    assert said | kept <= ledger_records(mirror)
    assert said <= kept  # an episode is said only once the ledger that records it is written...
    assert [e for e, n in Counter(taken_in(mirror)).items() if n > 1] == []  # ...so never twice


