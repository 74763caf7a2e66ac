"""Which remote a local folder belongs to: a coordinator's mirror, a worker's folder.

A mirror pushes what it holds to its remote, so a folder made for one remote and used with
another mixes two runs: the demo's local run pushed whole into a fresh remote, or an old
worker's book leased on refs the new remote never had (every push failing). Each folder's
git config records its remote (`REMOTE_KEY`, masked: no password is stored) and, for a
worker, its name and run; a start with another is refused (`ForeignFolder`, exit 2) before
anything is pushed, with what to do. A folder from before these keys is judged by what it
holds: a coordinator's mirror by whether it has the remote's main, a worker's by its run id.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from gitswarm.memory.gitdir import GitDir, GitReader
from gitswarm.memory.repo import META_REF
from gitswarm.remote import gitcli
from gitswarm.remote.errors import ForeignFolder
from gitswarm.remote.urls import mask

REMOTE_KEY = "gitswarm.remote"
"""The remote a folder mirrors (masked)."""
WORKER_KEY = "gitswarm.worker"
"""The worker name a worker's folder was made for."""
RUN_KEY = "gitswarm.run"
"""The run id a worker's folder joined."""
MAIN = "refs/heads/main"


def slug(url: str) -> str:
    """A folder name for `url`: its host and path, without scheme, user, password or `.git`."""
    text = mask(url)
    text = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", text)
    text = re.sub(r"^[^/@]*@", "", text)  # user (and masked password) of a URL or of user@host:path
    text = re.sub(r"\.git/*$", "", text.rstrip("/"))
    name = re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "remote"
    if len(name) > 80:
        name = name[-60:].lstrip("-.") + "-" + hashlib.sha1(url.encode()).hexdigest()[:8]
    return name


def default_mirror(url: str, root: Path = Path("runs")) -> Path:
    """The coordinator's mirror of `url` when no --mirror is given: `runs/remotes/<slug>`."""
    return root / "remotes" / slug(url)


def default_worker_folder(url: str, name: str, root: Path = Path("runs")) -> Path:
    """A worker's folder when no --dir is given: `runs/workers/<slug>/<name>`, so one name on
    two remotes gets two folders."""
    return root / "workers" / slug(url) / name


def check_mirror(folder: Path, url: str) -> None:
    """Refuse `folder` as the coordinator's mirror of `url` if it belongs to another remote,
    or holds a run that is not a mirror of `url` (a local run: the coordinator would push it
    whole into the remote). A new folder, or one already of `url`, passes."""
    repo = _open(folder)
    if repo is None:
        return
    found = _get(repo, REMOTE_KEY)
    if found is not None:
        if not _same(found, url):
            raise ForeignFolder(folder, f"is the mirror of the run on {found}, not of {mask(url)}", _other_mirror(
                url, f"to go on with that run, give its own remote: --run {found}"))
        return
    if repo.ref(MAIN) is None:
        return
    there = _remote_main(folder, url)
    if there is None or there not in repo:
        run = _run_id(repo) or "?"
        raise ForeignFolder(folder, f"holds the run {run}, which is not a mirror of {mask(url)} (a run made here, "
                            "such as the demo's, or the mirror of another remote)", _other_mirror(
                                url, f"to go on with the run in {folder}, give it where it was made: `--run {folder}` "
                                     "for a run made here, the URL of its own remote for a mirror"))


def _other_mirror(url: str, alternative: str) -> str:
    return f"give the run on {mask(url)} a folder of its own, --mirror {default_mirror(url)} (or any new folder); " \
        f"or, {alternative}"


def bind_mirror(folder: Path, url: str) -> None:
    """Record in `folder` (checked by `check_mirror`) that it mirrors `url`."""
    _set(folder, {REMOTE_KEY: mask(url)})


def check_worker(folder: Path, url: str, name: str) -> str | None:
    """Refuse `folder` for worker `name` of the run on `url` if it was made for another remote
    or another name. Returns the run id the folder holds now (None: none), for `bind_worker`
    to compare with the run the worker joins."""
    repo = _open(folder)
    if repo is None:
        return None
    found, named = _get(repo, REMOTE_KEY), _get(repo, WORKER_KEY)
    if found is not None and not _same(found, url):
        raise ForeignFolder(folder, f"is the folder of worker {named!r} of the run on {found}, not of "
                            f"{mask(url)}", f"give worker {name!r} a folder of its own with --dir DIR; or, to "
                            f"go on with that run, start it as `gitswarm worker {found} --name {named}`")
    if named is not None and named != name:
        raise ForeignFolder(folder, f"is the folder of worker {named!r}, not of {name!r}",
                            f"start it as --name {named}, or give worker {name!r} a folder of its own with --dir DIR")
    return _get(repo, RUN_KEY) or _run_id(repo)


def bind_worker(folder: Path, url: str, name: str, held: str | None) -> None:
    """After the worker fetched the run's meta into `folder`: refuse a folder that held a
    worker of another run (`held`, from `check_worker`), else record its remote, name and run."""
    repo = _open(folder)
    run = _run_id(repo) if repo is not None else None
    if held is not None and run is not None and held != run:
        raise ForeignFolder(folder, f"holds a worker of the run {held}, and the run on {mask(url)} is {run}",
                            f"give worker {name!r} a fresh folder with --dir DIR (or delete that folder if its "
                            "run is over); its claims and results there belong to the other run")
    _set(folder, {REMOTE_KEY: mask(url), WORKER_KEY: name, **({RUN_KEY: run} if run else {})})


def _open(folder: Path) -> GitDir | None:
    if not ((folder / "HEAD").exists() or (folder / ".git").exists()):
        return None
    return GitDir(folder)


def _get(repo: GitReader, key: str) -> str | None:
    return repo.config(key)


def _set(folder: Path, values: dict[str, str]) -> None:
    repo = _open(folder)
    if repo is not None:
        repo.configure(values)


def _same(a: str, b: str) -> bool:
    def plain(url: str) -> str:
        return mask(url).rstrip("/").removeprefix("file://")

    return plain(a) == plain(b)


def _remote_main(folder: Path, url: str) -> str | None:
    """The remote's main now (one ls-remote), or None when it has none (no run yet)."""
    out = gitcli.run(folder, ["ls-remote", "--refs", url, MAIN], url).stdout
    return next((ln.split("\t", 1)[0] for ln in out.splitlines() if ln.endswith(f"\t{MAIN}")), None)


def _run_id(repo: GitReader) -> str | None:
    ref = repo.ref(META_REF)
    if ref is None:
        return None
    try:
        meta = repo.file(ref, "run.json")
        return json.loads(meta).get("run_id") if meta is not None else None
    except (KeyError, ValueError, TypeError):
        return None
