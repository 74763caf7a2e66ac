"""What a coordinator publishes on the run's remote: the run's settings, its stop, its refs.

The settings live beside `run.json` on `refs/gitswarm/meta`, as `settings.json`: the run's
part of `SolveConfig` whole (every field that declares itself the run's, `engine.config.Part`),
the claims' time to live, each problem's kind and title, so a worker needs no problem files,
and the names of the coordinator's models (`ModelSettings.names`: the workers', the merger's,
the reviewer's), for the report. Nothing hidden and nothing secret goes
there: no API key, no server address, no problem's hidden parts (those never enter the
repository at all).

The stop is `refs/gitswarm/stop`, a commit whose `stop.json` holds the `Stop`'s reason and
detail; workers fetch it and stop claiming. `Publisher` pushes the coordinator's own refs
(main, meta, ledger, notes, grades, the stop, and the op refs of commits the remote's main
does not reach yet: `oprefs.py`), each leased on the value the remote had when it last looked,
and never over a value outside the local ref's history.

Readers read the settings and the stop back with `remote.published`. The coordinator's
ledger (`refs/gitswarm/ledger`) is published too: workers read the run's totals, its spending
(`remote.spending`) and the problems set aside (`RunStreaks`) from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from gitswarm import __version__
from gitswarm.core.stops import Stop
from gitswarm.domain.episode import EpisodeRecord
from gitswarm.engine.config import PARTS, SolveConfig
from gitswarm.engine.setaside import Streaks
from gitswarm.errors import BadInput
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.repo import META_BOOK, Memory
from gitswarm.memory.repo import META_REF as META_REF
from gitswarm.problems.model import Kind, Problem, ProblemSet
from gitswarm.remote.errors import OtherProtocol, PushRejected, RefMoved, RemoteError, StaleLease
from gitswarm.remote.published import SETTINGS, STOP_BOOK, STOP_FILE, published
from gitswarm.remote.published import STOP_REF as STOP_REF  # the publisher's names, as its users know them
from gitswarm.remote.published import read_stop as read_stop
from gitswarm.remote.transport import Remote, Update

PROTOCOL = 2
"""The run protocol: what coordinator and workers exchange (the refs of `layout`, claim
commits, ledger records, the spending record, these settings). Raised with any change one
side would misread; a worker joins only a run of its own protocol (`OtherProtocol`).
2: the run's settings are published whole (1 left out `isolation`: workers of an independent
run worked as a swarm), with the coordinator's model."""


def settings_of(cfg: SolveConfig, problem_set: ProblemSet, problems: list[str], claim_ttl_s: float) -> dict:
    """The run's settings as workers read them: the run's part of `cfg` whole, the claims'
    time to live, the problems, and (for the report) the coordinator's models' names."""
    return {"protocol": PROTOCOL, "gitswarm": __version__, "solve": cfg.part("run"), "claim_ttl_s": claim_ttl_s,
            "coordinator": cfg.models.names(),
            "set": problem_set.name,
            "problems": {p: {"kind": problem_set.get(p).kind.value, "title": problem_set.get(p).title}
                         for p in problems}}


def write_settings(memory: Memory, settings: dict) -> bool:
    """Put `settings` on the run's meta ref (a child commit, moved by compare-and-swap);
    False when they are unchanged."""
    data = json.dumps(settings, indent=1, sort_keys=True).encode()
    return memory.put_files(META_BOOK, {SETTINGS: data}, "gitswarm: the run's settings for remote workers") is not None


def read_settings(repo: GitReader, url: str = "the remote") -> dict:
    """The settings a coordinator published, for a worker to join by; `NotARun` when there are
    none, `OtherProtocol` when a gitswarm of another run protocol published them."""
    settings = published(repo)
    if settings.get("protocol") != PROTOCOL:
        raise OtherProtocol(url, settings.get("protocol"), settings.get("gitswarm"), PROTOCOL, __version__)
    return settings


def run_part(settings: dict, url: str = "the remote") -> dict:
    """The run's part of `SolveConfig` as its coordinator published it, whole; `OtherSettings`
    when it names other fields than this gitswarm's run part (another version published it)."""
    run = dict(settings["solve"])
    if set(run) != PARTS["run"]:
        raise OtherSettings(url, settings.get("gitswarm"), set(run))
    return run


class OtherSettings(BadInput):
    """The run's settings on the remote name fields this gitswarm does not know, or lack some
    it has: another gitswarm published them, and a worker would run that run by other rules."""

    def __init__(self, url: str, version: object, theirs: set[str]) -> None:
        unknown, missing = sorted(theirs - PARTS["run"]), sorted(PARTS["run"] - theirs)
        said = "; ".join(f"{what} {', '.join(names)}" for what, names in (
            ("it has settings this one does not know:", unknown), ("it lacks", missing)) if names)
        super().__init__(f"the run on {url} was published by gitswarm {version}, whose run settings differ from "
                         f"this gitswarm {__version__}'s ({said})", where=url,
                         fix="install the coordinator's gitswarm here and start the worker again")


def problem_set_of(settings: dict) -> ProblemSet:
    """The run's problems as a worker knows them: ids, kinds and titles, no statement files
    (the statements are on main) and no hidden parts."""
    from pathlib import Path

    problems = [Problem(id=pid, title=p["title"], kind=Kind(p["kind"]), statement="", path=Path(pid))
                for pid, p in settings["problems"].items()]
    return ProblemSet(settings["set"], Path(settings["set"]), problems)


def write_stop(memory: Memory, stop: Stop | None) -> None:
    """Set (or with None, clear) the run's stop on the local repository. Each change is a
    child of the last, moved by compare-and-swap, so the stop only moves forward, as the
    coordinator's other refs do (`Publisher` pushes nothing over a value outside their history)."""
    if stop is None:
        memory.put_files(STOP_BOOK, {STOP_FILE: None}, "gitswarm: the run goes on")
    else:
        data = json.dumps({"reason": stop.reason.value, "detail": stop.detail}).encode()
        memory.put_files(STOP_BOOK, {STOP_FILE: data}, f"gitswarm: run stopped: {stop.detail}")


class Publisher:
    """Pushes the coordinator's refs to the remote, each leased on the remote's last value.

    It never pushes over a value outside the local ref's history (`_ours`): such a value was
    put there by someone else, or the remote holds another run. That ref is `refused` from
    then on and `RefMoved` says so; the others go on being pushed."""

    def __init__(self, remote: Remote, refs: Iterable[str]) -> None:
        self.remote = remote
        self.own = tuple(refs)
        self.refused: dict[str, str] = {}
        """Ref -> the remote's value this publisher will not overwrite."""
        self._unsure = False
        self._read()

    def _read(self) -> None:
        """The leases: what the remote holds now of our refs (only we push them)."""
        self.known: dict[str, str | None] = {ref: None for ref in self.own}
        self.known |= self.remote.refs(*self.known)
        ops = self.remote.refs("refs/gitswarm/ops/*")
        self.known |= {r: v for r, v in ops.items() if r.startswith("refs/gitswarm/ops/")}

    def push(self, refs: Iterable[str], delete: Iterable[str] = (), keeper: str | None = None) -> list[str]:
        """Bring the remote's `refs` to the local values, in one atomic push; the refs moved.
        A lease found stale is read again and, when the remote's value is ours (a push of
        ours whose answer was lost, or a killed coordinator's last one), pushed once more.

        `delete`: refs to delete in the same push, each leased on its value last seen there,
        whose commits the remote's `keeper` reaches as last seen: the push leases `keeper` too
        (moved on, or kept where it was), so none goes while the remote's `keeper` is elsewhere,
        and none once `keeper` is refused."""
        if self._unsure:  # the last push may have landed with its answer lost
            self._read()
            self._unsure = False
        refs, delete = [ref for ref in refs if ref not in self.refused], list(delete)
        for again in (True, False):
            updates = self._updates(refs)
            there = self.known.get(keeper) if keeper is not None and keeper not in self.refused else None
            if keeper is not None and there is not None:
                if keeper not in {u.ref for u in updates}:
                    updates.append(Update(keeper, there, there))  # the lease alone: where it was
                updates += [Update(ref, None, old) for ref in delete if (old := self.known.get(ref)) is not None]
            try:
                self.remote.push(updates, follow=False)  # the local refs are the source, and move on
            except StaleLease as exc:
                if not again:
                    raise
                self.known |= dict.fromkeys(exc.stale) | self.remote.refs(*exc.stale)
                continue
            except PushRejected:
                raise
            except RemoteError:
                self._unsure = True
                raise
            for u in updates:
                if u.new is None:
                    self.known.pop(u.ref)  # an op ref main keeps the commit of: gone for good
                else:
                    self.known[u.ref] = u.new
            return [u.ref for u in updates]
        return []

    def check(self, ref: str) -> None:
        """Read the remote's `ref` when no push of ours has leased it lately: a value moved
        back along our history is taken as the lease (the next push moves it on); any other
        value is someone else's, and `RefMoved` says so as a push would. A push leases only the
        refs it moves, and a coordinator whose workers all fail on a main someone else pushed
        (their episodes cannot write a problem it lacks) would have nothing to push."""
        if ref in self.refused:
            return
        there = self.remote.refs(ref).get(ref)
        if there is None or there == self.known.get(ref):
            return
        repo = self.remote.gitdir()
        value = repo.ref(ref)
        if not _ours(repo, value, there):
            self.refused[ref] = there
            raise RefMoved(self.remote.shown, ref, there, value)
        self.known[ref] = there

    def _updates(self, refs: list[str]) -> list[Update]:
        repo = self.remote.gitdir()
        updates = []
        for ref in refs:
            value = repo.ref(ref)
            old = self.known.get(ref)
            if value == old:
                continue
            if old is not None and not _ours(repo, value, old):
                self.refused[ref] = old
                raise RefMoved(self.remote.shown, ref, old, value)
            updates.append(Update(ref, value, old))
        return updates


def _ours(repo: GitReader, value: str | None, there: str) -> bool:
    """Whether the remote's value `there` of a ref is in the history of our `value` (so
    pushing ours over it loses nothing): equal, or one of its ancestors (an absent one is ours too)."""
    return repo.in_history(there, value)


@dataclass
class RunStreaks(Streaks):
    """A worker's no-progress rule: the problems the coordinator set aside, as its ledger's
    scheduler record has them. The run's streaks span every worker's episodes, in the order
    the coordinator took them in, so a worker keeps none of its own."""

    published: set[str] = field(default_factory=set)

    def add(self, record: EpisodeRecord) -> bool:
        return False

    @property
    def set_aside(self) -> set[str]:
        return self.published
