"""The coordinator's intake: a worker's pushed episode, checked at the boundary, then adopted.

A worker pushes its episode's commit under its own refs. The coordinator takes it into the
run only once the episode's claim is closed by that worker (so a late result of a lost
holding is never taken), and only if the commit passes the checks the local memory makes
before it writes a contribution (`memory.write.validate`: names, path rules, sizes, that the
problem exists, that cited commits exist), plus what a pushed commit could forge: one parent
on main, changes only inside its problem folder (deletions too, as a code worker's shell
makes them: under `code/` only), and a record (`commitmeta.decode`) that agrees with the claim and
with the change (run, episode, op, worker, problem, kind, the files it declares, and the kind's
own fields: a nomination's candidate, a review's candidate and verdict). A commit that passes
is adopted as it is (same id, so its transcript note and the worker's history stay valid):
`Memory.adopt` sets its branch and op ref in one ref transaction, and the merger composes it
as any local branch.

What the record names is checked by `named.check_named`: cited commits, a nomination's
candidate and a review's are commits of main (the candidates of its own problem), and the
files agree with the kind.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from gitswarm.core.status import Status
from gitswarm.domain.contribution import Contribution
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.domain.kinds import CONTRIBUTION_KINDS, Verdict
from gitswarm.memory import books, commitmeta, people, trees, write
from gitswarm.memory.errors import ContributionRefused
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.paths import WriteLimits
from gitswarm.remote import layout
from gitswarm.remote.claims import Claim
from gitswarm.remote.named import check_named, on_main

KINDS = CONTRIBUTION_KINDS


class Refused(Exception):
    """A pushed episode the coordinator will not merge, and why."""

    def __init__(self, episode: str, worker: str, reason: str) -> None:
        self.episode, self.worker, self.reason = episode, worker, reason
        super().__init__(f"{episode} from {worker} refused: {reason}")


@dataclass(frozen=True)
class Pushed:
    """A closed claim's results as the worker pushed them."""

    claim: Claim
    commit: str | None
    """The tip of the worker's `swarm/<episode>` branch, or None (no commit: abstained, failed)."""


def pushed(repo: GitReader, claim: Claim) -> Pushed:
    """What the claim's closer pushed for its episode (from the coordinator's mirror)."""
    return Pushed(claim, repo.ref(layout.worker_ref(claim.worker, write.branch_ref(claim.episode))))


def owns(worker: str, slot: str) -> bool:
    """A commit's `Worker` may be the process's name or one of its slots (`<name>-w01`)."""
    return slot == worker or slot.startswith(f"{worker}-")


def check(repo: GitReader, run_id: str, main: str, item: Pushed,
          limits: WriteLimits | None = None, known: Collection[str] = frozenset()) -> str:
    """The op id the pushed commit carries, once every check passed; `Refused` otherwise.
    `known`: commits known to be on main, which need no walk of its history (`named.on_main`)."""
    claim = item.claim

    def refuse(reason: str) -> Refused:
        return Refused(claim.episode, claim.worker, reason)

    if item.commit is None:
        raise refuse("it pushed no commit to take in")
    commit = repo.info(item.commit)
    meta = commit.meta
    op = getattr(meta, "op", "")
    ops = ((claim.episode,) if people.is_person(claim.episode)  # a person's op is its episode (`memory.people`)
           else (f"{claim.episode}-final", f"{claim.episode}-incomplete"))
    if op not in ops:
        raise refuse(f"its Op trailer {op!r} is not this episode's")
    if len(commit.parents) != 1:
        raise refuse(f"{len(commit.parents)} parents; a contribution has one, a commit of main")
    parent = commit.parents[0]
    if not on_main(repo, main, parent, known):
        raise refuse("its parent is not a commit of main")
    files, deleted = _changes(repo, parent, commit.id, claim.problem, refuse)
    if not isinstance(meta, commitmeta.ContributionRecord):
        raise refuse(f"kind {getattr(meta, 'kind', '')!r} is not one of a contribution's ({', '.join(sorted(KINDS))})")
    _fields(meta, run_id, claim, files, deleted, refuse)
    check_named(repo, main, claim.problem, claim.episode, meta, files, refuse, known)
    written: dict[str, bytes | str] = dict(files)  # what a Contribution takes: text or bytes
    contribution = Contribution(problem=claim.problem, episode=claim.episode, worker=meta.worker, kind=meta.kind,
                                title="", files=written, parent=parent, op=op,
                                informed_by=meta.informed_by, deleted=tuple(deleted))
    try:
        repo.validate(contribution, limits or WriteLimits())
    except ContributionRefused as exc:
        raise refuse(str(exc)) from None
    return op


def _fields(meta: commitmeta.ContributionRecord, run_id: str, claim: Claim, files: dict[str, bytes],
            deleted: list[str], refuse) -> None:
    """The record agrees with the claim and with the change, and has its kind's fields only."""
    for name, value in {"run": run_id, "episode": claim.episode, "problem": claim.problem}.items():
        if getattr(meta, name) != value:
            raise refuse(f"its {name.title()} trailer {getattr(meta, name)!r} should be {value!r}")
    if not owns(claim.worker, meta.worker):
        raise refuse(f"its Worker trailer {meta.worker!r} is not one of {claim.worker}'s")
    if meta.person and not people.is_person(claim.episode):  # a person's word is marked so, and only theirs
        raise refuse("a Person trailer belongs on a person's contribution (refs/gitswarm/people/person-...) only")
    if people.is_person(claim.episode) and not meta.person:
        raise refuse("a person's contribution names its person in a Person trailer")
    if sorted(meta.files) != sorted(files):
        raise refuse("its Files trailer does not list the files it changes")
    if sorted(meta.deleted) != sorted(deleted):
        raise refuse("its Deleted trailer does not list the files it deletes")
    _kind_fields(meta, refuse)


def _changes(repo: GitReader, before: str, after: str, problem: str,
             refuse) -> tuple[dict[str, bytes], list[str]]:
    """The files the commit adds or changes and those it deletes, relative to its problem
    folder; `refuse` for a change anywhere else or anything but a plain file. (Renames are
    not detected: a moved file is a deletion and an addition, each checked.)"""
    prefix = f"problems/{problem}/"
    files, deleted = {}, []
    for delta in repo.diff(before, after):
        path = delta.path
        if not path.startswith(prefix) or not delta.old_path.startswith(prefix):
            raise refuse(f"it writes {path}, outside its problem folder {prefix}")
        if delta.status == "D":
            if not path.startswith(f"{prefix}code/"):  # a shell deletes only code (reviews, votes: never)
                raise refuse(f"it deletes {path}; a contribution may delete only files under code/")
            deleted.append(path.removeprefix(prefix))
            continue
        if delta.status not in ("A", "M"):
            raise refuse(f"it changes {path} in a way a contribution cannot ({delta.status})")
        if delta.mode != trees.FILE:
            raise refuse(f"{path} is not a plain file")
        files[path.removeprefix(prefix)] = repo.blob(delta.blob)
    return files, deleted


def _kind_fields(meta: commitmeta.ContributionRecord, refuse) -> None:
    if meta.kind not in KINDS:
        raise refuse(f"unknown kind {meta.kind!r}")
    if commitmeta.stray(meta):
        raise refuse(f"a {meta.kind} carries {', '.join(commitmeta.stray(meta))}, which belong to another kind "
                     "(a candidate on a nomination, a reviewed commit and a verdict on a review)")
    if isinstance(meta, commitmeta.NominationRecord) and not meta.candidate:
        raise refuse("a nomination names its candidate")
    if isinstance(meta, commitmeta.ReviewRecord) and not meta.reviews:
        raise refuse("a review names the commit it reviews")
    if isinstance(meta, commitmeta.ReviewRecord) and not isinstance(meta.verdict, Verdict):
        raise refuse(f"verdict {meta.verdict!r} is not one of {', '.join(Verdict)}")
    if isinstance(meta, commitmeta.ReviewRecord) and meta.reviews not in meta.informed_by:
        raise refuse("the reviewed commit is not in Informed-By")


def transcript(repo: GitReader, worker: str, commit: str) -> str | None:
    """The transcript note the worker pushed for `commit`, if any."""
    return repo.note(commit, layout.worker_ref(worker, "refs/notes/transcripts"))


NO_RECORD = "refused by the coordinator: no ledger record was pushed"
"""The note of a closed claim whose closer's record is not in sight (yet: `Coordinator.landing`)."""


def closed(memory, claim: Claim) -> tuple[EpisodeRecord, Pushed]:
    """The closer's record of the episode and what it pushed, from the coordinator's mirror."""
    return record(memory, claim), pushed(memory.reader(), claim)


def take(memory, item: Pushed, taken: Collection[str]) -> str | None:
    """Check a pushed commit at the boundary and adopt it (raises `intake.Refused`); its
    transcript as the worker pushed it. `taken`: main's commits, no walk of history for them."""
    claim = item.claim
    op = check(memory.reader(), memory.run_id, memory.main(), item, memory.limits, taken)
    assert item.commit is not None  # `check` refuses a push without one
    memory.adopt(claim.episode, op, item.commit)
    return transcript(memory.reader(), claim.worker, item.commit)


def record(memory, claim: Claim) -> EpisodeRecord:
    """The closer's ledger record of the episode, as it pushed it; a missing one is failed."""
    book = layout.worker_ref(claim.worker, books.ref_name("ledger")).removeprefix("refs/gitswarm/")
    data = memory.reader().record(book, f"episodes/{claim.episode[:4]}/{claim.episode}.json")
    if not isinstance(data, dict) or data.get("episode") != claim.episode:
        return EpisodeRecord(claim.episode, claim.worker, claim.problem, status=Status.FAILED, process=claim.worker,
                             note=NO_RECORD)
    found = EpisodeRecord.from_dict(data)
    found.process = claim.worker
    if not owns(claim.worker, found.worker) or found.problem != claim.problem:
        return EpisodeRecord(claim.episode, claim.worker, claim.problem, status=Status.FAILED, process=claim.worker,
                             note="refused by the coordinator: its ledger record does not match its claim")
    if found.status == Status.RUNNING:
        found.status, found.note = Status.STOPPED, "closed without a final record"
    found.commit = None
    return found
