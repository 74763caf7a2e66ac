"""What `gitswarm note` and `gitswarm review` share: the run and problem a person names, who
they are, and how their contribution lands.

A person's contribution goes through `Memory.contribute`, the checks and the write of a
worker's (`memory.write.validate`), on a branch of its own (`memory.people`). It never takes the
run lock a live `solve` holds: when no solve holds it, the command composes the branch into main
itself (under the lock, so no solve starts meanwhile); when one does, that run's merger finds the
branch within a second and composes it under main's compare-and-swap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitswarm.cli.log import unknown
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.runlock import RunBusy, run_lock
from gitswarm.errors import BadInput
from gitswarm.memory import people
from gitswarm.memory.errors import ContributionRefused
from gitswarm.memory.repo import Memory


@dataclass(frozen=True)
class Landed:
    """Where a person's contribution is: its commit, and main's commit that merged it (None:
    a running solve's merger composes it, or a conflict left it waiting)."""

    commit: str
    merged: str | None
    note: str
    """One line for the person: what happened to it."""


def open_run(run: str, problem: str) -> Memory:
    """The run folder `run` (a `NotARun` when it is none) and a check that it has `problem`."""
    memory = Memory(Path(run))
    if problem not in memory.problems():
        raise unknown(f"{run} has no problem {problem!r}", problem, memory.problems(), "its problems")
    return memory


def read_text(file: Path) -> str:
    """The text of the person's file: UTF-8, not empty."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{file}: no such file", where=str(file), fix="give the file that holds your text") from None
    except UnicodeDecodeError:
        raise BadInput(f"{file}: not UTF-8 text", where=str(file)) from None
    if not text.strip():
        raise BadInput(f"{file} is empty: there is nothing to add", where=str(file))
    return text


def index_of(memory: Memory) -> MemoryIndex:
    """The index of main as it is now (the selection's view of the run)."""
    index = MemoryIndex()
    memory.snapshot().catch_up(index)
    return index


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "note"


def free_path(memory: Memory, problem: str, folder: str, name: str) -> str:
    """`<folder>/<name>.md`, or with `-2`, `-3`... where main has that file already."""
    taken = {p.rsplit("/", 1)[-1] for p in memory.files_under(f"problems/{problem}/{folder}")}
    found, n = f"{name}.md", 1
    while found in taken:
        n += 1
        found = f"{name}-{n}.md"
    return f"{folder}/{found}"


def contribution(memory: Memory, author: str | None, **fields) -> Contribution:
    """A person's contribution on main's tip: their name, a fresh episode, its own op."""
    name, email = people.identity(author, memory)
    episode = people.new_episode()
    return Contribution(episode=episode, worker=people.worker_of(name), op=episode, parent=memory.main(),
                        person=(name, email), model="person", **fields)


def land(memory: Memory, c: Contribution) -> Landed:
    """Write `c` (the memory's checks refuse it as bad input, nothing written), then compose it
    into main unless a running solve's merger will."""
    try:
        written = memory.contribute(c)
    except ContributionRefused as exc:
        raise BadInput(str(exc)) from None
    try:
        with run_lock(memory.path):
            composed = memory.compose([c.episode])
    except RunBusy:
        return Landed(written.commit, None, "a solve is running on this run: its merger composes it into main "
                                            "within a few seconds, and the next episodes see it")
    if composed.commit is None or c.episode not in composed.merged:
        return Landed(written.commit, None, f"it conflicts with main; it waits on swarm/{c.episode} for the "
                                            "next solve of this run, whose merger composes it")
    return Landed(written.commit, composed.commit, f"merged into main ({composed.commit[:12]})")


def commits(memory: Memory, revs: list[str]) -> list[str]:
    """The full ids of the commits `revs` name (`BadInput` for one the run does not have)."""
    found = []
    for rev in revs:
        try:
            found.append(memory.commit(rev).id)
        except (KeyError, ValueError):
            raise BadInput(f"--cites {rev!r} is not a commit of this run",
                           fix="`gitswarm log RUN --problem ID` lists the run's commits") from None
    return found


def is_remote(run: str) -> bool:
    from gitswarm.remote import urls

    return urls.is_remote(run)


def push_remote(url: str, problem: str, build: Callable[[Memory], Contribution]) -> Landed:
    """Write the contribution `build` makes in a copy of the run at `url`, with the memory's
    checks, and push it for the run's coordinator, which checks it again and merges it."""
    from gitswarm.remote import people as remote_people
    from gitswarm.remote.snapshot import copied
    from gitswarm.remote.urls import mask

    with copied(url) as folder:
        memory = open_run(str(folder), problem)
        c = build(memory)
        try:
            written = memory.contribute(c)
        except ContributionRefused as exc:
            raise BadInput(str(exc)) from None
        remote_people.push(url, memory, c.episode, written.commit)
    return Landed(written.commit, None, f"pushed to {mask(url)}: the run's coordinator checks it and merges it "
                                        "at its next step (a run not going takes it in when it resumes)")
