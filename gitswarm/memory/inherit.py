"""A run that begins from another run's memory (`gitswarm solve SET --run NEW --from OLD`).

The new run's first commit has OLD's `main` as its parent, so `git log` and citations reach
every inherited commit, and its tree holds OLD's folders of the problems both runs have (notes,
lemmas, attempts, codebases, reviews, the summary; OLD's `SOLUTION.md` is OLD's selection and
stays behind), with the new set's statements. The run's metadata names what it inherited
(`inherits`), its own first commit (`root`) and every run its memory began from (`runs`, for
the index: `MemoryIndex.inherited_runs`). Ledger, budget, grades and selection are the new run's
own: no other ref of OLD is copied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitswarm.memory import books, objects, trees
from gitswarm.memory.errors import NotARun

LEDGER, SCHEDULER = "ledger", "scheduler.json"
"""The ledger's book and its scheduler record (`memory.ledgerbook`), whose numbering a new run continues."""
INHERITED_REF = "refs/gitswarm/inherited"
"""OLD's main as the new run took it (a record; main holds it as an ancestor)."""
LEFT_BEHIND = ("SOLUTION.md",)
"""Files of a problem's folder that stay with the run that wrote them."""


@dataclass(frozen=True)
class Origin:
    """The run a new run begins from: what `Memory.create` takes from it."""

    path: Path
    run_id: str
    set_name: str
    main: str
    """OLD's main tip when the new run was made."""
    problems: tuple[str, ...]
    runs: tuple[str, ...]
    """OLD's run and every run OLD itself began from."""
    next_number: int = 1
    """The number of OLD's next episode: the new run's episodes go on from it, so no episode id
    (nor the file names workers make of one) is both runs'."""

    def shared(self, problems: list[str]) -> list[str]:
        """The problems of `problems` OLD has, in their order."""
        return [p for p in problems if p in self.problems]

    def as_meta(self, shared: list[str]) -> dict[str, object]:
        return {"run": self.run_id, "path": str(self.path.resolve()), "commit": self.main, "problems": shared}


def origin(path: Path, set_name: str) -> Origin:
    """The run at `path` as an origin for a run of the set `set_name`; `NotARun` (bad input) when
    it is no run, or a run of another set."""
    from gitswarm.memory.repo import Memory  # the run's own checks of what a run is

    try:
        old = Memory(Path(path))
    except NotARun as exc:
        raise NotARun(f"--from: {exc}") from None
    if old.meta.get("set") != set_name:
        raise NotARun(f"--from {path} is a run of the set {old.meta.get('set')!r}, not {set_name!r}; "
                      "a run can only begin from a run of the same problem set")
    earlier = old.meta.get("runs", [])
    state = old.record(LEDGER, SCHEDULER)
    number = state.get("next_number") if isinstance(state, dict) else None
    runs = (old.run_id, *(r for r in earlier if isinstance(r, str)))
    return Origin(Path(path), old.run_id, set_name, old.main(), tuple(old.problems()), runs,
                  number if isinstance(number, int) else 1)


def distinct(run_id: str, taken: tuple[str, ...]) -> str:
    """`run_id`, or with `-2`, `-3`... when a run it inherits has that id: its commits tell the
    runs apart by their run trailer alone (`commitmeta`)."""
    found, n = run_id, 1
    while found in taken:
        n += 1
        found = f"{run_id}-{n}"
    return found


def check_resumed(meta: dict[str, object], run: Path, source: Path) -> None:
    """A resumed run given `--from`: the same command again is fine (it began from `source`);
    a run that began otherwise is refused (`NotARun`), since its memory cannot change origin."""
    began = meta.get("inherits")
    if not isinstance(began, dict) or began.get("path") != str(Path(source).resolve()):
        raise NotARun(f"{run} exists and did not begin from {source}: --from applies when a run is created; "
                      f"drop it to resume {run}, or give a new --run folder")


def graft(repo: pygit2.Repository, source: Origin, shared: list[str],
          files: dict[str, bytes]) -> tuple[pygit2.Oid, list[pygit2.Oid]]:
    """Bring OLD's main into `repo` (a new run's repository, being made) and return the tree of
    the new run's first commit (OLD's folders of `shared` under `files`) and its parents."""
    remote = repo.remotes.create_anonymous(str(Path(source.path).resolve()))
    remote.fetch([f"refs/heads/main:{INHERITED_REF}"])
    tip = objects.commit(repo, repo.references[INHERITED_REF].target)
    changes: trees.Changes = {}
    for problem in shared:
        entry = trees.lookup(tip.tree, f"problems/{problem}")
        if entry is not None:
            changes[f"problems/{problem}"] = entry
            changes.update({f"problems/{problem}/{name}": None for name in LEFT_BEHIND})
    base = trees.update(repo, None, changes)
    tree = trees.update(repo, objects.tree(repo, base), trees.blobs(repo, {
        path: data for path, data in files.items() if not _inherited_summary(path, shared)}))
    if source.next_number > 1:
        books.put(repo, LEDGER, {SCHEDULER: {"next_number": source.next_number}},
                  f"ledger: episodes go on from run {source.run_id}'s numbering")
    return tree, [tip.id]


def _inherited_summary(path: str, shared: list[str]) -> bool:
    """A shared problem keeps OLD's SUMMARY.md rather than the new run's empty one."""
    parts = path.split("/")
    return len(parts) == 3 and parts[0] == "problems" and parts[1] in shared and parts[2] == "SUMMARY.md"


def runs_of(repo: pygit2.Repository) -> frozenset[str]:
    """The runs the run in `repo` began from (its metadata's `runs`); none for a repository
    without run metadata (a remote's mirror, a replay being made)."""
    ref = repo.references.get(books.ref_name("meta"))
    if ref is None:
        return frozenset()
    try:
        meta = json.loads(objects.blob(repo, repo[ref.target].peel(pygit2.Commit).tree["run.json"].id).data)
    except (KeyError, ValueError, TypeError):
        return frozenset()
    runs = meta.get("runs", []) if isinstance(meta, dict) else []
    return frozenset(r for r in runs if isinstance(r, str))

