"""What a git call against the remote raises; each error carries what its caller reacts to.

Every message names the remote by its masked URL (`urls.mask`) and quotes git's own words,
masked too, so no password written into a URL ever reaches a log or a terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gitswarm.errors import BadInput, EnvironmentFault


class RemoteError(EnvironmentFault):
    """A git call against the remote failed; `url` is masked (also `where`), `detail` is what
    git said, `fix` the advice."""

    advice = "fix what git says, then run the same command again"
    silent = ("git gave no reason (it may have been stopped by a signal); run the same command again, and "
              "`git ls-remote URL` run here shows whether the remote answers")
    """The advice when git said nothing: a message must not point at words that are not there."""

    def __init__(self, url: str, detail: str, what: str = "") -> None:
        self.url = url
        self.detail = detail
        said = f" (git: {detail})" if detail else ""
        advice = self.advice if detail or type(self).advice != RemoteError.advice else self.silent
        super().__init__(f"{what or self._what()}{said}", where=url, fix=advice)

    def _what(self) -> str:
        return f"git failed on the remote {self.url}"


class Unreachable(RemoteError):
    """The remote did not answer (refused, unresolved, timed out, hung up): retry later."""

    advice = "check the address and that the server is up; the next fetch or push tries again"

    def _what(self) -> str:
        return f"cannot reach the remote {self.url}"


class AuthFailed(RemoteError):
    """The remote refused our credentials, or git had none to give: retrying cannot help."""

    advice = ("gitswarm uses git's own credentials: check that `git ls-remote URL` works here "
              "(ssh key, credential helper)")

    def _what(self) -> str:
        return f"the remote {self.url} refused access"


class NoRepository(RemoteError, BadInput):
    """No repository at that address (or the server does not export it): the URL given is
    wrong, so a command ends with bad input's exit code (2), as for a folder that is not a run."""

    advice = "create a bare repository there first (`git init --bare`), or fix the path"

    def _what(self) -> str:
        return f"there is no git repository at {self.url}"


class MissingRef(RemoteError):
    """A fetch asked for a ref the remote does not have."""

    advice = "it may not have been pushed yet"

    def __init__(self, url: str, detail: str, ref: str) -> None:
        self.ref = ref
        super().__init__(url, detail, f"the remote {url} has no ref {ref}")


class PushRejected(RemoteError):
    """The remote refused a push; `rejected` maps each refused ref to git's reason. An atomic
    push changed nothing. Rejected for no stale ref (a lock held on the server, a hook):
    the same push may be tried again."""

    advice = "nothing was changed; the push may be tried again"

    def __init__(self, url: str, detail: str, rejected: dict[str, str], what: str = "") -> None:
        self.rejected = rejected
        shown = ", ".join(f"{ref} {reason}" for ref, reason in rejected.items())
        super().__init__(url, detail, what or f"the remote {url} rejected the push of {shown}")


class StaleLease(PushRejected):
    """Compare-and-swap lost: the remote's `ref` is no longer `expected` (None: absent).
    `stale` lists every ref of the push that failed so; nothing of the push was applied."""

    advice = "nothing was changed; fetch the ref to see who moved it"

    def __init__(self, url: str, detail: str, rejected: dict[str, str], ref: str,
                 expected: str | None, stale: tuple[str, ...]) -> None:
        self.ref = ref
        self.expected = expected
        self.stale = stale
        super().__init__(url, detail, rejected, self._lost(url))

    def _lost(self, url: str) -> str:
        was = "absent" if self.expected is None else f"at {self.expected[:12]}"
        return f"{self.ref} on the remote {url} is no longer {was}"


class RefExists(StaleLease):
    """An atomic create lost: `ref` already exists on the remote."""

    advice = "nothing was changed; another writer created it first"

    def __init__(self, url: str, detail: str, rejected: dict[str, str], ref: str,
                 stale: tuple[str, ...]) -> None:
        super().__init__(url, detail, rejected, ref, None, stale)

    def _lost(self, url: str) -> str:
        return f"{self.ref} already exists on the remote {url}"


class NameInUse(RemoteError):
    """A worker's own refs on the remote moved to commits it did not push: another process
    runs under its name. Nothing was pushed; its claims are left to expire and run again."""

    advice = "give each worker process its own --name; this one's claims expire and other workers run them"

    def __init__(self, url: str, detail: str, worker: str, refs: tuple[str, ...]) -> None:
        self.worker = worker
        self.refs = refs
        super().__init__(url, detail, f"another process pushes as worker {worker!r} to {url}: "
                         f"{', '.join(refs)} moved to commits this one did not push")


class RefMoved(RemoteError):
    """One of the coordinator's refs on the remote holds a commit outside the run's history
    (`found`; ours is `local`): someone else moved it, or the remote holds another run. The
    coordinator does not overwrite it."""

    advice = ("the coordinator will not overwrite it: find out who moved it (`git fetch` the ref and read its "
              "log), then put it back, or give the --mirror this run was started with, or use another remote")

    def __init__(self, url: str, ref: str, found: str, local: str | None) -> None:
        self.ref, self.found, self.local = ref, found, local
        ours = f"this run's is {local[:12]}" if local else "this run has no such ref"
        super().__init__(url, "", f"{ref} on the remote {url} is at {found[:12]}, which is not in this "
                         f"run's history ({ours})")


OUTAGE_S = 300.0
"""How long in a row a coordinator or a worker goes on while its remote is unreachable."""


class Outage:
    """`Unreachable` tolerated for at most `limit_s` in a row: a restarted server or a dropped
    connection is waited out (the next fetch or push tries again), a remote gone for good is not."""

    def __init__(self, limit_s: float = OUTAGE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit_s = limit_s
        self.clock = clock
        self.since: float | None = None

    def failed(self, exc: Unreachable) -> bool:
        """Note one failure; True for the first of an outage; raises `exc` once it lasted too long."""
        now = self.clock()
        first = self.since is None
        if self.since is None:
            self.since = now
        if now - self.since > self.limit_s:
            raise exc
        return first

    def ok(self) -> None:
        self.since = None


class OtherProtocol(BadInput):
    """The run on the remote was published by a gitswarm that speaks another run protocol
    (the refs, claim commits and records coordinator and workers exchange) than this one."""

    def __init__(self, url: str, theirs: object, version: object, ours: int, our_version: str) -> None:
        self.theirs, self.ours = theirs, ours
        by = (f"gitswarm {version} (run protocol {theirs})" if theirs is not None
              else "a gitswarm from before run protocols were numbered")
        super().__init__(f"the run on {url} was published by {by}; this is gitswarm {our_version} (run protocol "
                         f"{ours}), and one misreads the other's claims and records", where=url,
                         fix="install the coordinator's gitswarm here and start the worker again")



class ForeignFolder(BadInput):
    """A local folder (a coordinator's mirror, a worker's folder) was made for another remote,
    another run or another worker name than this command's; nothing was pushed or changed."""

    def __init__(self, folder: object, what: str, advice: str) -> None:
        self.folder = folder
        super().__init__(f"{folder} {what}, and gitswarm will not mix the two", where=str(folder), fix=advice)


class PushesFailing(RemoteError):
    """A worker's results could not be pushed after every try: it released the claims it held
    (so other workers run those episodes at once) and ends, rather than holding them in silence."""

    advice = ("it released its claims, so other workers run those episodes again, and stopped; check that "
              "`git push` to the remote works from here, then start the worker again")

    def __init__(self, url: str, detail: str, worker: str, episodes: tuple[str, ...]) -> None:
        self.worker, self.episodes = worker, episodes
        super().__init__(url, detail, f"worker {worker!r} could not push the results of {', '.join(episodes)} "
                         f"to {url}")
