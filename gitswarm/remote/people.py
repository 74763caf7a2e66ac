"""People's contributions to a run on a git remote (`gitswarm note URL ...`): pushed by the person
to `refs/gitswarm/people/<episode>` (an atomic create), fetched by the coordinator with the
claims, checked at the boundary as a worker's pushed episode is (`intake.check`: one parent on
main, changes inside its problem folder, a record that agrees with them and marks it a person's,
the memory's own checks), then adopted and composed by the merger like any branch."""

from __future__ import annotations

from collections.abc import Collection

from gitswarm.memory import commitmeta, people
from gitswarm.memory.repo import Memory
from gitswarm.remote import intake, layout
from gitswarm.remote.claimcommit import Claim
from gitswarm.remote.transport import Remote, Update


def waiting(memory: Memory, seen: Collection[str]) -> dict[str, str]:
    """The people's contributions in the mirror not taken in or refused yet: episode -> commit."""
    reader = memory.reader()
    found = {}
    for name in reader.refs(layout.PEOPLE):
        episode, commit = name.removeprefix(layout.PEOPLE), reader.ref(name)
        if commit is not None and episode not in seen and people.is_person(episode):
            found[episode] = commit
    return found


def take(memory: Memory, episode: str, commit: str, taken: Collection[str]) -> bool:
    """Check a person's pushed contribution and adopt it on `swarm/<episode>` (raises
    `intake.Refused`); False when the run has it already."""
    meta = memory.reader().info(commit).meta
    worker = getattr(meta, "worker", "")
    if not worker.startswith(people.PREFIX) or not isinstance(meta, commitmeta.ContributionRecord):
        raise intake.Refused(episode, worker or "?", "a person's contribution carries a person's worker name")
    holding = Claim(episode, worker, meta.problem, generation=0, claimed=0.0, expires=0.0, done=True)
    op = intake.check(memory.reader(), memory.run_id, memory.main(), intake.Pushed(holding, commit),
                      memory.limits, taken)
    return memory.adopt(episode, op, commit)


def push(url: str, mirror: Memory, episode: str, commit: str) -> None:
    """Push a person's contribution, written in `mirror` (a copy of the run at `url`), to the
    remote for its coordinator: a create, which fails if the ref exists."""
    Remote(url, mirror.path).push([Update(layout.person_ref(episode), commit)])
