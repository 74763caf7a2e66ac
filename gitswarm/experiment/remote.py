"""An experiment whose runs are coordinated runs on git remotes: the spec's `[remote]`.

Each arm × seed is then what `gitswarm solve SET --run URL` makes: a run on its own remote
repository `<url>/<run>.git`, coordinated from the experiment's folder (the run's folder is
the coordinator's mirror, so its figures are read as a local run's), with `local_workers`
episodes of the coordinator's own and any `gitswarm worker <url>/<run>.git` that joins it.
Under a `file://` base the experiment makes each bare repository; under any other scheme
they must exist (an empty bare repository each, HEAD on main), as for `solve --run URL`.

The experiment publishes its list of runs (name, URL, state) to `<url>/experiment.git`, ref
`refs/gitswarm/experiment`, each time a run's state changes: `gitswarm worker URL --experiment`
reads it and joins the experiment's runs one after another (`remote/follow.py`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from gitswarm.errors import BadInput

KEYS = ("url", "local_workers", "claim_ttl", "patience")


@dataclass(frozen=True)
class RemoteArms:
    """Where an experiment's runs live on git remotes, and how each is coordinated."""

    url: str
    """The base: run `<name>` is `<url>/<name>.git`."""
    local_workers: int | None = None
    """Episodes in flight in each coordinator's own process; None: the arm's `workers`."""
    claim_ttl_s: float = 600.0
    patience_s: float = 600.0
    """How long a coordinator waits with no worker holding or closing a claim before it stops."""

    def url_of(self, run: str) -> str:
        return f"{self.url.rstrip('/')}/{run}.git"

    def index_url(self) -> str:
        from gitswarm.remote.follow import index_url

        return index_url(self.url)

    def ready(self, run: str) -> str:
        """The run's URL; under `file://`, its bare repository made if missing."""
        return _made(self.url_of(run))

    def publish(self, folder: Path, runs: list[dict], finished: bool) -> str | None:
        """Push the list of `runs` (each with its name, url and state) to the index; `finished`:
        no run is left to run. Returns None when pushed, else why not (the experiment goes on:
        workers that follow it see the list of the last push)."""
        import contextlib
        import json

        from gitswarm.remote.errors import MissingRef, RemoteError
        from gitswarm.remote.follow import INDEX_REF
        from gitswarm.remote.transport import Remote, Update

        try:
            remote = Remote(_made(self.index_url()), folder / "index.git")
            if remote.local(INDEX_REF) is None:
                with contextlib.suppress(MissingRef):  # none yet; else a resumed experiment's last list
                    remote.fetch([f"+{INDEX_REF}:{INDEX_REF}"])
            last = remote.local(INDEX_REF)
            listed = [{"name": r["name"], "url": r["url"], "state": r["state"]} for r in runs]
            data = json.dumps({"runs": listed, "finished": finished}, indent=1).encode()
            commit = remote.gitdir().commit({"runs.json": data}, "gitswarm: the experiment's runs\n",
                                            [last] if last is not None else [])
            remote.push([Update(INDEX_REF, commit, last)])
        except RemoteError as exc:
            return str(exc)
        return None


def _made(url: str) -> str:
    """`url`; under `file://`, its bare repository made if missing (HEAD on main)."""
    parsed = urlparse(url)
    if parsed.scheme == "file" and not (folder := Path(unquote(parsed.path))).exists():
        from gitswarm.remote.daemon import bare
        from gitswarm.remote.gitcli import run as git

        folder.parent.mkdir(parents=True, exist_ok=True)
        bare(folder)
        git(folder, ("symbolic-ref", "HEAD", "refs/heads/main"), url)
    return url


def remote_arms(path: Path, table: object) -> RemoteArms | None:
    """The spec's `[remote]` table, checked; None when the spec has none."""
    if table is None:
        return None
    if not isinstance(table, dict) or not isinstance(table.get("url"), str) or not table["url"]:
        raise BadInput(f"{path}: [remote] needs url = \"...\": the base URL of the runs' repositories, each run "
                       "at <url>/<run>.git, e.g. url = \"file:///srv/experiments/swarm-vs-single\"")
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            raise BadInput(f"{path}: unknown key {key!r} in [remote]; "
                           + (f"did you mean {close[0]}?" if close else f"known: {', '.join(KEYS)}"))
    from gitswarm.remote.urls import is_remote

    if not is_remote(table["url"]):
        raise BadInput(f"{path}: [remote] url = {table['url']!r} is not a git URL (file://, ssh://, git://, "
                       "http(s):// or user@host:path); for runs in the experiment's own folder, drop [remote]")
    numbers: dict[str, int | float | None] = {}
    for key, least in (("local_workers", 0), ("claim_ttl", 1), ("patience", 1)):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < least
                                  or (key == "local_workers" and not isinstance(value, int))):
            kind = "a whole number" if key == "local_workers" else "a number of seconds"
            raise BadInput(f"{path}: [remote] {key} must be {kind}, at least {least}, not {value!r}")
        numbers[key] = value
    local = numbers["local_workers"]  # checked a whole number above
    return RemoteArms(table["url"], None if local is None else int(local),
                      float(numbers["claim_ttl"] or 600.0), float(numbers["patience"] or 600.0))
