"""Which of the coordinator's op refs the remote holds: those whose commit its main does not reach.

An op ref (`refs/gitswarm/ops/<op>`) keeps the commit of one operation in the run: an episode
the coordinator adopted, a digest, a summary, a selection. The coordinator's repository keeps
every one: they are the memory's record of which operations are done. The remote needs one
only until its main reaches the commit; from then on main keeps it, and the ref only adds to
the cost of every push (the remote's connectivity check reads every ref it holds), which two
refs per episode kept for good made grow with the run. So the remote holds the op refs of the
commits its main does not reach yet (an episode adopted and not merged: in flight, or waiting
on a conflict), and `OpRefs.changes` says, each time the coordinator publishes, which to push
and which to delete.

Coverage is judged against the main the remote holds (the publisher's lease), never against
a main not pushed yet: a delete never runs ahead of the main that keeps its commit. Each call's
work is bounded by what changed since the last: the op refs written since (`Memory.ops_written`;
the adoptions are made there, on the git thread; a write by the memory's writer process is not
among them, but those are commits onto main, which main reaches) and main's commits since the
main last walked. A coordinator started again lists its op refs
and walks main's history once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gitswarm.memory.repo import Memory
from gitswarm.remote.prune import MOST  # refs in one push at most: an older coordinator's op refs go over several

PREFIX = "refs/gitswarm/ops/"


@dataclass
class OpRefs:
    """The coordinator's op refs whose commits the remote's main does not reach yet."""

    waiting: dict[str, str] = field(default_factory=dict)
    """Op ref -> its commit, for the commits the walked main does not reach."""
    _by_commit: dict[str, set[str]] = field(default_factory=dict)
    _read: int | None = None
    """How many of the memory's `ops_written` were read; None before the first listing."""
    _walked: str | None = None
    """The main whose history `waiting` was checked against."""

    def changes(self, memory: Memory, main: str | None,
                remote: Mapping[str, str | None]) -> tuple[list[str], list[str]]:
        """(op refs to push, op refs to delete), given the remote's `main` and the refs it holds
        as last seen (`remote`: ref -> value, None for one gone). Runs in the git thread."""
        repo = memory.reader()
        if main is not None and main not in repo:
            main = None  # someone else's commit: it keeps none of ours
        if self._walked not in (None, main) and not repo.in_history(self._walked, main):  # main moved back,
            self.waiting, self._by_commit, self._read, self._walked = {}, {}, None, None  # or is not ours: anew
        if self._read is None:  # first call: every op ref the run has, then only those written since
            self._read = len(memory.ops_written)
            fresh = sorted(repo.refs(PREFIX))
        else:
            fresh, self._read = memory.ops_written[self._read:], len(memory.ops_written)
        for ref in fresh:
            commit = repo.ref(ref)
            if commit is not None and ref not in self.waiting:
                self.waiting[ref] = commit
                self._by_commit.setdefault(commit, set()).add(ref)
        if main is not None and main != self._walked:  # the new commits only: an op ref read now was written
            for commit in repo.since(main, self._walked):  # after the main last walked was pushed, so its
                self._reached(commit)  # commit is not in that main (an adopted one is merged after its adoption)
            self._walked = main
        delete = [ref for ref, value in remote.items() if ref.startswith(PREFIX) and value is not None
                  and ref not in self.waiting and repo.ref(ref) == value]  # ours, and main keeps its commit
        return sorted(self.waiting), sorted(delete)[:MOST]

    def _reached(self, commit: str) -> None:
        for ref in self._by_commit.pop(commit, ()):
            del self.waiting[ref]
