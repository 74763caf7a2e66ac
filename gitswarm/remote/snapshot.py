"""A run on a git remote, read from anywhere: a temporary mirror of it, for `status` and `report`.

The remote holds everything the read model needs (main, the coordinator's ledger, the grades,
the notes, the workers' refs), so a `git clone --mirror` of it reads as the coordinator's own
run folder does. The copy is made per command and removed after; git's credentials are git's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitswarm.memory.errors import NotARun
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.repo import META_REF
from gitswarm.remote import gitcli
from gitswarm.remote.urls import mask, scheme


@contextmanager
def copied(url: str) -> Iterator[Path]:
    """A bare mirror of the run at `url`, in a temporary folder for the `with` block.

    Raises the transport's typed errors (`Unreachable`, `AuthFailed`, `NoRepository`), and
    `NotARun` when the repository there holds no run yet."""
    scheme(url)  # an unknown transport is refused before any git call
    with tempfile.TemporaryDirectory(prefix="gitswarm-copy-") as tmp:
        path = Path(tmp) / "run.git"
        gitcli.run(Path(tmp), ["clone", "--mirror", "--quiet", url, str(path)], url)
        if GitReader(path).ref(META_REF) is None:
            raise NotARun(f"{mask(url)} holds no gitswarm run yet (no {META_REF}): start one there with "
                          f"`gitswarm solve SET --run {mask(url)}`")
        yield path
