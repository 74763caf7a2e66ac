"""What a pushed contribution's record names, checked against main and against its files.

A local episode can only name what it read, and it reads main: every commit it cites
(`informed_by`), the candidate it nominates (`Nomination.candidate`) and the one it reviews
(`Review.reviews`) come from the index, which follows main, and the last two are an attempt or a program of its
own problem (`MemoryIndex.resolve`). Its tools also shape the files: a nomination is the one
file `nominations/<episode>.md`, whose front matter names the candidate (`engine/tools/nominate.py`), no
other contribution writes there (`engine/tools/write_file.py`), and every review file is headed by front
matter naming what it reviews, the verdict and the episode (`tools.contribute._stamped`). The run's
read model and selection trust those records and that front matter once a commit is on
main, so a pushed commit must show the same, or a worker could cite commits no one can read,
nominate another problem's attempt, or vote under another episode's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from gitswarm.domain.kinds import CANDIDATE_FOLDERS
from gitswarm.memory import commitmeta
from gitswarm.memory.gitdir import GitReader
from gitswarm.readmodel.tree import front

COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")


def check_named(repo: GitReader, main: str, problem: str, episode: str, meta: commitmeta.ContributionRecord,
                files: dict[str, bytes], refuse: Callable[[str], Exception],
                known: Collection[str] = frozenset()) -> None:
    """Raise `refuse(reason)` unless what the record names is on main and agrees with `files`
    (paths relative to the problem folder). `known`: commits known to be on main (see `on_main`)."""
    for cited in meta.informed_by:
        if not on_main(repo, main, cited, known):
            raise refuse(f"it cites {cited[:40]!r}, which is not a commit of main")
    named = {"candidate": getattr(meta, "candidate", ""), "reviewed commit": getattr(meta, "reviews", "")}
    for what, commit in named.items():
        if commit and not _candidate(repo, main, problem, commit, known):
            raise refuse(f"its {what} {commit[:40]!r} is not an attempt or program of {problem} on main")
    own = f"nominations/{episode}.md"
    if isinstance(meta, commitmeta.NominationRecord):
        if set(files) != {own} or str(front(files[own]).get("candidate")) != meta.candidate:
            raise refuse(f"a nomination is the one file {own}, naming its candidate")
    elif any(path.startswith("nominations/") for path in files):
        raise refuse("only a nomination writes under nominations/")
    if isinstance(meta, commitmeta.ReviewRecord):
        stamp = {"reviews": meta.reviews, "verdict": str(meta.verdict), "episode": episode}
        reviews = [path for path in files if path.startswith("reviews/")]
        if not reviews:
            raise refuse("a review writes its review under reviews/")
        for path in reviews:
            head = front(files[path])
            if any(str(head.get(k)) != v for k, v in stamp.items()):
                raise refuse(f"{path} does not name the review's reviewed commit, verdict and episode")


def on_main(repo: GitReader, main: str, commit: str, known: Collection[str] = frozenset()) -> bool:
    """`commit` is main's tip or one of its ancestors. `known` (the coordinator's index of main,
    `MemoryIndex.taken`: main only moves forward, so each is on main still) spares the walk
    for the commits it holds: libgit2 walks main's history back to the commit, and a cite of
    an early commit walked most of a long run's history (py-spy at C=256: a fifth of the
    coordinator's busy samples, and `intake.check` a third)."""
    if not COMMIT_ID.match(commit):
        return False
    return commit in known or repo.in_history(commit, main)


def _candidate(repo: GitReader, main: str, problem: str, commit: str, known: Collection[str]) -> bool:
    """An attempt or a program of `problem`: a commit of main that wrote one (its record is
    trusted, since it passed these checks, or was written by the run itself; its files are its
    tree's change)."""
    if not on_main(repo, main, commit, known):
        return False
    if repo.info(commit).problem != problem:
        return False
    return any(path.startswith(CANDIDATE_FOLDERS) for path in repo.changes(commit, problem).written)

