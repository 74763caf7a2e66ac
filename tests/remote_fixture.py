"""Helpers of the remote tests: commits written into a mirror, the repository behind a
fixture's URL, fsck of a served repository, and the pushes git's own trace saw."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import pygit2
from pygit2.enums import FileMode

from gitswarm.remote.transport import Remote


def commit(remote: Remote, text: str, parent: str | None = None) -> str:
    """A commit holding one file, written into the mirror with no ref."""
    repo = pygit2.Repository(str(remote.mirror))
    builder = repo.TreeBuilder()
    builder.insert("f.txt", repo.create_blob(text.encode()), FileMode.BLOB)
    sig = pygit2.Signature("t", "t@gitswarm.local", 1_700_000_000, 0)
    parents = [pygit2.Oid(hex=parent)] if parent else []
    return str(repo.create_commit(None, sig, sig, f"{text}\n", builder.write(), parents))


def served(url: str, tmp_path: Path) -> Path:
    """The bare repository behind a `remote_url` fixture's URL, for checks with plain git."""
    if url.startswith("file://"):
        return Path(urlparse(url).path)
    return tmp_path / "served" / url.rsplit("/", 1)[1]


def fsck_served(repo: Path) -> bool:
    """`git fsck --full --strict` passes on a served repository. Dangling objects are no
    damage, and neither are git's notices (an unborn HEAD, no refs): these remotes need no main."""
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--full", "--strict"], capture_output=True, text=True)
    problems = [ln for ln in (done.stdout + done.stderr).splitlines()
                if ln.strip() and not ln.startswith(("dangling ", "notice: "))]
    return done.returncode == 0 and not problems




def pushed_refs(trace: Path) -> list[list[str]]:
    """The remote refs of each `git push` a process ran, in order, from git's own trace
    (`GIT_TRACE2_EVENT=<trace>`: every git process logs its command line)."""
    pushes = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        argv = event.get("argv", [])
        if event["event"] == "start" and "/" not in event["sid"] and "push" in argv:
            pushes.append([spec.rsplit(":", 1)[1] for spec in argv if spec.count(":") == 1 and ":refs/" in spec])
    return pushes


def git_commands(trace: Path) -> Counter:
    """How many times a process ran each git command (`push`, `fetch`, ...), from git's own
    trace; the git processes those start (upload-pack, ...) are not counted."""
    found: Counter = Counter()
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "cmd_name" and "/" not in event["sid"]:
            found[event["name"]] += 1
    return found
