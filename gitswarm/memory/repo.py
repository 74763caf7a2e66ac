"""`Memory`: the run repository — created once, then written by contributions and merges."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pygit2
from pygit2.enums import ObjectType, RepositoryOpenFlag

from gitswarm import __version__
from gitswarm.domain.contribution import Contribution
from gitswarm.memory import books, commitmeta, gitrefs, inherit, objects, read, refdirs, trees, write
from gitswarm.memory import compose as composer
from gitswarm.memory.errors import NotARun, RunTooNew
from gitswarm.memory.gitdir import GitReader
from gitswarm.memory.model import CommitInfo, Item, Written
from gitswarm.memory.paths import WriteLimits
from gitswarm.memory.retry import retry
from gitswarm.memory.snapshot import Snapshot
from gitswarm.problems.model import Problem, ProblemSet
from gitswarm.resources import render

FORMAT = 1
"""Run format version, kept in run.json on refs/gitswarm/meta; a run of a higher format is refused."""
META_BOOK = "meta"
META_REF = books.ref_name(META_BOOK)
NOTES_REF = "refs/notes/transcripts"
TRANSCRIPTS = "transcripts"
"""The book (`refs/gitswarm/transcripts`) of the transcripts of episodes without a commit."""
INITIAL_SUMMARY = "# Summary\n\nNo work on this problem yet.\n"
MainRecord = commitmeta.Solution | commitmeta.ContributionRecord | commitmeta.Merge | commitmeta.Other
"""The records of a system write on main (`Memory.commit_to_main`): each has its run and op."""


class Memory:
    """The run's git repository. Safe to share between threads: calls are serialised.

    Every write is idempotent by operation id and every ref move is a compare-and-swap,
    so several processes may open the same run.
    """

    def __init__(self, path: Path, limits: WriteLimits | None = None) -> None:
        self.path = Path(path)
        self.limits = limits or WriteLimits()
        try:
            self.repo = pygit2.Repository(str(self.path), flags=RepositoryOpenFlag.NO_SEARCH)
        except pygit2.GitError:
            raise NotARun(f"{self.path} is not a gitswarm run (no git repository there); give the "
                          "folder `gitswarm solve` made, e.g. runs/<set>") from None
        self.meta = _read_meta(self.repo, self.path)
        self.run_id: str = self.meta["run_id"]
        self._lock = threading.RLock()
        self._line = composer.MainLine()
        self._root: str | None = None
        self.ops_written: list[str] = []
        """The op refs this object wrote, in order (appended under the lock): what a reader of
        new ops (`remote.oprefs`) reads instead of listing every op ref of the run again."""
        refdirs.keep(self.repo)
        _cache_trees()

    @classmethod
    def create(cls, path: Path, problem_set: ProblemSet, run_id: str | None = None,
               problem_ids: list[str] | None = None, origin: inherit.Origin | None = None) -> Memory:
        """Create a run repository holding the visible statements (never hidden parts); with
        `origin`, its memory begins with that run's main for the problems both have."""
        path = Path(path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise NotARun(f"{path} exists and is not empty (or not a folder); choose another --run folder")
        run_id = run_id or time.strftime("%Y-%m-%dT%H%M") + f"-{problem_set.name}"
        if origin is not None:  # a run made within the minute of the one it inherits is still another run
            run_id = inherit.distinct(run_id, origin.runs)
        problems = [p for p in problem_set.problems if problem_ids is None or p.id in problem_ids]
        # Made whole beside the folder, then renamed into place: a run killed while it is made
        # (SIGKILL too) leaves no half-made repository at `path` that would block the retry.
        part = path.with_name(f".{path.name}.creating")
        shutil.rmtree(part, ignore_errors=True)  # what a creation cut short left
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            _init_run(part, problem_set, run_id, problems, origin)
            os.rename(part, path)  # onto an absent or empty folder
        except BaseException:  # a full disk, Ctrl-C
            shutil.rmtree(part, ignore_errors=True)
            raise
        return cls(path)

    # -- writes ---------------------------------------------------------------------------

    def contribute(self, contribution: Contribution) -> Written:
        """Commit a contribution on `swarm/<episode>`; the same op twice returns the first."""
        with self._lock:
            done = write.find_op(self.repo, contribution.op)
            if done is not None:
                return Written(done, existed=True)
            files = write.validate(self.repo, contribution, self.limits)
            written = retry(lambda: write.write(self.repo, self.run_id, contribution, files))
            if not written.existed:
                self.ops_written.append(write.op_ref(contribution.op))
            return written

    def adopt(self, episode: str, op: str, commit: str) -> bool:
        """Put a commit a remote worker pushed, checked by intake, on `swarm/<episode>` with its
        op ref; False when the op is already in the run (a retried intake)."""
        with self._lock:
            adopted = retry(lambda: write.adopt(self.repo, episode, op, commit))
            if adopted:
                self.ops_written.append(write.op_ref(op))
            return adopted

    def compose(self, episodes: list[str] | None = None,
                resolutions: Sequence[composer.Resolution] = ()) -> composer.Composed:
        """Merge pending branches (all, or `episodes`) into main; retried until main is ours."""
        with self._lock:
            return retry(lambda: composer.compose(self.repo, self.run_id, episodes, resolutions, self._line))

    def pack_refs(self) -> bool:
        """Pack loose refs (one op ref per write) so that listing them is one file read, by
        git (`gitrefs.pack`: libgit2's packing could undo a `git gc` running beside it). False
        when it was put off (another writer packing, or git too slow): pack next time.

        Only at the end of a run, once its result is written: deleting a packed branch
        rewrites the whole packed-refs file, one line per op ever written (31 ms at 20,000
        lines, against 1.5 ms for a loose one), and every merge deletes the branches it took
        in. git reads each loose ref's object to pack it: at 19,000 episodes, with the early
        ones' objects out of the page cache, that took longer than git is allowed."""
        with self._lock:
            return gitrefs.pack(self.repo)

    def commit_to_main(self, files: dict[str, bytes], subject: str, record: MainRecord) -> Written:
        """A system write straight onto main (SOLUTION.md, the merger's summaries), idempotent by
        `record.op`; the record's run is this run."""
        with self._lock:
            done = write.find_op(self.repo, record.op)
            if done is not None:
                return Written(done, existed=True)
            message = commitmeta.encode(replace(record, run=self.run_id), subject)
            written = retry(lambda: write.to_main(self.repo, files, message, record.op))
            self.ops_written.append(write.op_ref(record.op))
            return written

    def put_records(self, book: str, records: dict[str, object], message: str) -> None:
        """Write bookkeeping records (ledger, grades) agents never read; see books.py."""
        with self._lock:
            retry(lambda: books.put(self.repo, book, records, message))

    def put_files(self, book: str, files: dict[str, bytes | None], message: str, keep: bool = False) -> str | None:
        """Write (bytes) or remove (None) files of the book `refs/gitswarm/<book>` in one commit:
        a compare-and-swap of the ref, under the lock and the retry. The new tip, or None when
        nothing changed (so the ref did not move). `keep`: files the book holds stay as they are."""
        with self._lock:
            return retry(lambda: books.put_blobs(self.repo, book, files, message, keep))

    def record(self, book: str, path: str) -> object | None:
        """One bookkeeping record, or None if the book has no such record."""
        with self._lock:
            return books.get(self.repo, book, path)

    def records(self, book: str, folder: str = "") -> dict[str, object]:
        with self._lock:
            return books.all_records(self.repo, book, folder)

    def add_transcript(self, commit: str, text: str) -> None:
        """Attach an episode's model transcript to its commit as a git note (idempotent)."""
        self.add_transcripts({commit: text})

    def add_transcripts(self, transcripts: dict[str, str]) -> None:
        """`add_transcript` for several commits (commit -> text), in one commit of the notes."""
        texts = {commit: text.replace("\x00", "\\0") for commit, text in transcripts.items()}  # notes are C strings
        with self._lock:
            new = {commit: text for commit, text in texts.items() if self.transcript(commit) != text}
            if new:
                retry(lambda: books.put_notes(self.repo, NOTES_REF, new))

    def put_transcript(self, episode: str, text: str) -> str:
        """Keep the transcript of an episode that has no commit (failed, abstained, stopped) in
        the transcripts book; returns where, as `git show` takes it."""
        path = f"episodes/{episode[:4]}/{episode}.md"
        self.put_files(TRANSCRIPTS, {path: text.encode("utf-8", "replace")}, f"transcript of {episode}")
        return f"{books.ref_name(TRANSCRIPTS)}:{path}"

    def book_text(self, spec: str) -> str | None:
        """The text `put_transcript` kept at `spec` (`<ref>:<path>`), or None."""
        ref, _, path = spec.partition(":")
        with self._lock:
            found = self.repo.references.get(ref)
            tip = objects.commit(self.repo, objects.target(found)) if found is not None else None
            entry = trees.lookup(tip.tree, path) if tip is not None else None
            return None if entry is None else objects.blob(self.repo, entry[0]).data.decode("utf-8", "replace")

    # -- reads ----------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """A read-only view of the run, pinned at main's tip and the unmerged branches as they
        are now: what views, reports and exports read through."""
        with self._lock:
            return Snapshot.of(self.repo)

    def reader(self) -> GitReader:
        """The run's refs, files and books as they are now, for readers of a layer above that
        name refs of their own (the stop, the settings); a `snapshot` pins main instead."""
        return GitReader(self.repo)

    def main(self) -> str:
        with self._lock:
            return str(self.repo.references[composer.MAIN].target)

    def root(self) -> str:
        """The run's first commit on main: the statements, before any work. Walks main's
        first parents (one per merge) once; a run's root never changes."""
        if self._root is None and isinstance(self.meta.get("root"), str):
            self._root = self.meta["root"]  # a run that began from another: main goes on into it
        if self._root is None:
            with self._lock:
                walker = self.repo.walk(self.repo.references[composer.MAIN].target)
                walker.simplify_first_parent()
                self._root = str(next(c for c in walker if not c.parent_ids).id)
        return self._root

    def op_commit(self, op: str) -> str | None:
        with self._lock:
            return write.find_op(self.repo, op)

    def pending(self) -> dict[str, str]:
        """Unmerged episode branches: episode id -> tip commit."""
        with self._lock:
            return {e: str(t) for e, t in composer.pending(self.repo).items()}

    def problems(self) -> list[str]:
        return list(self.meta["problems"])

    def items(self, problem: str, kind: str | None = None, at: str | None = None) -> list[Item]:
        with self._lock:
            return read.items(self.repo, problem, kind, at or self.main())

    def files_under(self, folder: str, at: str | None = None) -> list[str]:
        """The paths of the files below `folder` on commit `at` (default: main)."""
        with self._lock:
            return read.files_under(self.repo, folder, at or self.main())

    def read_file(self, path: str, at: str | None = None) -> bytes | None:
        with self._lock:
            return read.file(self.repo, path, at or self.main())

    def blob_ids(self, paths: list[str], at: str) -> dict[str, str | None]:
        """The blob id of each path on commit `at` (None where there is none)."""
        with self._lock:
            tree = self.repo.revparse_single(at).peel(pygit2.Tree)
            return {path: None if (e := trees.lookup(tree, path)) is None else str(e[0]) for path in paths}

    def transcript(self, commit: str) -> str | None:
        with self._lock:
            try:
                note = self.repo.lookup_note(commit, NOTES_REF)
            except KeyError:
                return None
            return note.message

    def commit(self, rev: str) -> CommitInfo:
        with self._lock:
            return read.info(self.repo.revparse_single(rev).peel(pygit2.Commit))

    def log(self, problem: str | None = None, worker: str | None = None, kind: str | None = None,
            include_pending: bool = False, limit: int | None = None) -> list[CommitInfo]:
        """Commits newest first, filtered by their trailers (merges only when kind='merge')."""
        with self._lock:
            heads = [self.main()] + (list(self.pending().values()) if include_pending else [])
            found = read.log(self.repo, heads, problem, worker, kind)
            return list(itertools.islice(found, limit))


def _init_run(path: Path, problem_set: ProblemSet, run_id: str, problems: list[Problem],
              origin: inherit.Origin | None = None) -> None:
    """The new run's repository: main with the visible statements (on `origin`'s main, with its
    folders of the problems both runs have), and the run metadata."""
    repo = pygit2.init_repository(str(path), bare=True, initial_head="main")
    files = {"README.md": render("run_readme.md.j2", run_id=run_id, set_name=problem_set.name,
                                 description=problem_set.description, problems=problems).encode()}
    for problem in problems:
        for name, data in problem.visible_files().items():
            files[f"problems/{problem.id}/{name}"] = data
        files[f"problems/{problem.id}/SUMMARY.md"] = INITIAL_SUMMARY.encode()
    sig = write.committer()
    meta: dict[str, Any] = {}
    if origin is None:
        parents: list[pygit2.Oid] = []
        tree, message = trees.update(repo, None, trees.blobs(repo, files)), f"run: start {run_id}\n"
    else:
        shared = origin.shared([p.id for p in problems])
        tree, parents = inherit.graft(repo, origin, shared, files)
        message = (f"run: start {run_id}\n\nIts memory begins with run {origin.run_id}'s main "
                   f"({origin.main[:12]}) for {len(shared)} problem(s): {', '.join(shared)}.\n")
        meta = {"inherits": origin.as_meta(shared), "runs": list(origin.runs)}
    root = repo.create_commit(composer.MAIN, sig, sig, message, tree, parents)
    meta = {"format": FORMAT, "run_id": run_id, "set": problem_set.name,
            "set_path": str(Path(problem_set.path).resolve()),
            "problems": [p.id for p in problems], "created": int(time.time()),
            "gitswarm": __version__, **meta, **({"root": str(root)} if origin is not None else {})}
    meta_file = {"run.json": json.dumps(meta, indent=2).encode()}
    meta_tree = trees.update(repo, None, trees.blobs(repo, meta_file))
    repo.create_commit(META_REF, sig, sig, "gitswarm: run metadata\n", meta_tree, [])


CACHE_BYTES = 32 * 1024 * 1024
"""libgit2's object cache for the whole process (its default is 256 MiB): what a merge and a
contribution re-read is the few problem folders in work, not the whole history."""


def _cache_trees() -> None:
    """libgit2 caches no tree over 4 KiB by default; a problem folder's tree is read on every
    contribution and merge, and re-inflating it costs 10x the merge itself."""
    pygit2.settings.cache_object_limit(ObjectType.TREE, 4 * 1024 * 1024)
    pygit2.settings.cache_object_limit(ObjectType.COMMIT, 256 * 1024)
    pygit2.settings.cache_max_size(CACHE_BYTES)


def _read_meta(repo: pygit2.Repository, path: Path) -> dict[str, Any]:
    ref = repo.references.get(META_REF)
    if ref is None:
        raise NotARun(f"{path} is a git repository but not a gitswarm run (no {META_REF}); give the "
                      "folder `gitswarm solve` made, e.g. runs/<set>")
    try:
        meta = json.loads(objects.blob(repo, repo[ref.target].peel(pygit2.Commit).tree["run.json"].id).data)
        if not isinstance(meta, dict):
            raise ValueError("run.json holds no object")
        version = meta.get("format", 0)
    except (KeyError, ValueError, TypeError):  # TypeError: run.json is a folder
        raise NotARun(f"{path} has unreadable run metadata ({META_REF}:run.json); it was not made "
                      "by this gitswarm, or was damaged") from None
    if not isinstance(version, int) or version > FORMAT:
        raise RunTooNew(f"{path} was made by a newer gitswarm (run format {version!r}; this gitswarm "
                        f"{__version__} reads format {FORMAT} and older); upgrade gitswarm to open it")
    return meta
