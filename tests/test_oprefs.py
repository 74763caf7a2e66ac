"""The op refs a coordinator's remote holds: only those whose commit the remote's main does not
reach yet (`remote.oprefs`), on a real bare remote through the real publisher. Every commit the
coordinator's repository holds an op ref of stays reachable on the remote throughout; the remote's
refs stay bounded by the work not merged yet, not by the run's length (the whole coordinator:
`test_remote_run.py`)."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from test_memory import contribution

from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.remote import layout
from gitswarm.remote.daemon import bare
from gitswarm.remote.oprefs import PREFIX, OpRefs
from gitswarm.remote.publish import Publisher
from gitswarm.remote.transport import Remote


class Coordinator:
    """The publishing half of a coordinator: its repository, its publisher, its op refs."""

    def __init__(self, memory: Memory, remote: Path) -> None:
        self.memory = memory
        self.publisher = Publisher(Remote(remote.as_uri(), memory.path), [layout.MAIN])
        self.ops = OpRefs()

    def publish(self) -> None:
        known = self.publisher.known
        push, gone = self.ops.changes(self.memory, known.get(layout.MAIN), dict(known))
        self.publisher.push([layout.MAIN, *push], gone, layout.MAIN)


def held(remote: Path) -> set[str]:
    """The op refs the remote holds, by op."""
    return set(git(remote, "for-each-ref", "--format=%(refname:lstrip=3)", PREFIX).split())


def kept(memory: Memory, remote: Path) -> None:
    """Every commit the coordinator holds an op ref of is reachable on the remote."""
    there = set(git(remote, "rev-list", "--all").split())
    ours = git(memory.path, "for-each-ref", "--format=%(objectname)", PREFIX).split()
    assert ours and set(ours) <= there


def write(memory: Memory, episode: str) -> None:
    memory.contribute(contribution(memory, episode, {f"notes/{episode}.md": f"{episode}\n"}))


def test_the_remote_holds_only_the_op_refs_its_main_does_not_reach(memory: Memory, tmp_path: Path):
    remote = bare(tmp_path / "remote.git")
    one = Coordinator(memory, remote)
    write(memory, "e00001")
    write(memory, "e00002")
    one.publish()
    assert held(remote) == {"e00001-contribute", "e00002-contribute"}  # adopted, not merged: kept by their refs
    memory.compose(["e00001"])
    one.publish()
    assert held(remote) == {"e00001-contribute", "e00002-contribute"}  # not before the remote's main reaches it
    kept(memory, remote)
    one.publish()
    assert held(remote) == {"e00002-contribute"}
    kept(memory, remote)
    record = commitmeta.Other(kind="summary", run="", op="summary-sum-1", problem="sum")
    memory.commit_to_main({"problems/sum/SUMMARY.md": b"# Summary\n"}, "summary(sum)", record)
    one.publish()
    one.publish()
    assert held(remote) == {"e00002-contribute"}  # a write on main: main keeps it
    kept(memory, remote)

    again = Coordinator(Memory(memory.path), remote)  # a coordinator started again: lists its op refs once
    again.publish()
    assert held(remote) == {"e00002-contribute"}
    again.memory.compose()
    again.publish()
    again.publish()
    assert held(remote) == set()
    kept(memory, remote)


def test_a_remote_an_older_coordinator_filled_with_op_refs_sheds_them(memory: Memory, tmp_path: Path):
    """Before, every op ref went to the remote for good: the next coordinator deletes those its
    main keeps and leaves the rest."""
    remote = bare(tmp_path / "remote.git")
    for episode in ("e00001", "e00002", "e00003"):
        write(memory, episode)
    memory.compose(["e00001", "e00002"])
    git(memory.path, "push", "-q", remote.as_uri(), f"{layout.MAIN}:{layout.MAIN}", f"{PREFIX}*:{PREFIX}*")
    assert len(held(remote)) == 3
    coordinator = Coordinator(memory, remote)
    coordinator.publish()
    assert held(remote) == {"e00003-contribute"}
    kept(memory, remote)


def test_a_main_moved_back_on_the_remote_keeps_what_it_no_longer_reaches(memory: Memory, tmp_path: Path):
    """The remote's main moved back along the run's history (a killed coordinator's late push):
    the deletes judged against the main last pushed go only in the push that moves main on."""
    remote = bare(tmp_path / "remote.git")
    coordinator = Coordinator(memory, remote)
    coordinator.publish()
    old = git(remote, "rev-parse", layout.MAIN).strip()
    write(memory, "e00001")
    memory.compose()
    coordinator.publish()
    assert held(remote) == {"e00001-contribute"}
    git(remote, "update-ref", layout.MAIN, old)  # the main that reached e00001 is gone from the remote
    coordinator.publish()
    assert held(remote) == set()
    assert git(remote, "rev-parse", layout.MAIN) == git(memory.path, "rev-parse", layout.MAIN)
    kept(memory, remote)
