"""Find what to grade on `main`: a problem's selected solution, or every candidate.

The selection is `problems/<id>/SOLUTION.md`, written by the engine: YAML front matter with
`problem`, `candidate` (full commit id), `path` (the candidate's file, or for programs its
`code/<slug>` folder, in that commit's tree) and `nominations`; the body is the candidate's
text. Candidates of `--all` are the files of `attempts/` (answer and proof problems) and the
folders of `code/` (program problems); each is attributed to the contribution commit that
last changed it, found by walking main's history for the commits whose record names the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gitswarm.memory import trees
from gitswarm.memory.repo import Memory
from gitswarm.memory.snapshot import Snapshot
from gitswarm.problems import frontmatter
from gitswarm.problems.model import Kind

CODE_KINDS = (Kind.PROGRAM, Kind.REPRODUCE)
"""Kinds whose candidates are `code/<slug>` folders rather than attempt files."""


@dataclass(frozen=True)
class CandidateContent:
    """One candidate solution with its content: where it lives and what it holds, as the referee
    grades it (its standing in the run is `domain.candidate.Candidate`)."""

    problem: str
    commit: str
    path: str
    text: str = ""
    """The candidate's text (answer and proof candidates)."""
    files: dict[str, bytes] | None = None
    """The candidate's program files, relative to its folder (program candidates)."""
    nominations: int | None = None


class CandidateError(Exception):
    """A selection or candidate cannot be read; the message says which and why."""


def solution_path(problem: str) -> str:
    return f"problems/{problem}/SOLUTION.md"


def selected(memory: Memory, problem: str, kind: Kind) -> CandidateContent | None:
    """The problem's selected solution on main, or None when there is none yet."""
    raw = memory.read_file(solution_path(problem))
    if raw is None:
        return None
    try:
        parsed = frontmatter.split(raw.decode("utf-8", "replace"))
    except frontmatter.FrontMatterError as exc:
        raise CandidateError(f"{solution_path(problem)}: {exc.message}") from None
    values = parsed.values
    missing = [k for k in ("candidate", "path") if not values.get(k)]
    if missing:
        raise CandidateError(f"{solution_path(problem)} lacks {', '.join(missing)} in its front matter")
    nominations = str(values.get("nominations") or "")
    found = load(memory, problem, kind, str(values["candidate"]), str(values["path"]),
                 fallback_text=parsed.body)
    return CandidateContent(found.problem, found.commit, found.path, found.text, found.files,
                     int(nominations) if nominations.isdigit() else None)


def load(memory: Memory, problem: str, kind: Kind, commit: str, path: str,
         fallback_text: str = "") -> CandidateContent:
    """Read a candidate's content from commit `commit` (its text, or its program files)."""
    return _load(memory.snapshot(), problem, kind, commit, path, fallback_text)


def _load(snapshot: Snapshot, problem: str, kind: Kind, commit: str, path: str,
          fallback_text: str = "") -> CandidateContent:
    try:
        tip = snapshot.commit(commit)
    except (KeyError, ValueError):
        raise CandidateError(f"candidate commit {commit} of {problem} is not in this run") from None
    if kind in CODE_KINDS:
        folder = snapshot.subtree(tip.tree, path)
        if folder is None:
            raise CandidateError(f"{path} is not a folder in commit {commit[:12]}")
        return CandidateContent(problem, str(tip.id), path, files=dict(snapshot.files(folder)))
    data = snapshot.blob(tip.tree, path)
    if data is not None:
        text = data.decode("utf-8", "replace")
    elif fallback_text.strip():
        text = fallback_text
    else:
        raise CandidateError(f"{path} is not a file in commit {commit[:12]}")
    return CandidateContent(problem, str(tip.id), path, text=text)


def every(memory: Memory, problem: str, kind: Kind) -> list[CandidateContent]:
    """Every candidate on main: attempts (or code folders), each with its last-changing commit."""
    snapshot = memory.snapshot()
    folder = f"problems/{problem}/{'code' if kind in CODE_KINDS else 'attempts'}"
    found = snapshot.subtree(snapshot.tree(), folder)
    if found is None:
        return []
    want_tree = kind in CODE_KINDS
    paths = {f"{folder}/{e.name}": (e.id, e.filemode) for e in found if (e.filemode == trees.FOLDER) == want_tree}
    owners = last_changed(snapshot, problem, paths)
    return [_load(snapshot, problem, kind, owners[p], p) for p in sorted(paths) if p in owners]


def last_changed(snapshot: Snapshot, problem: str, paths: Mapping[str, trees.Entry]) -> dict[str, str]:
    """For each path, the newest contribution of `problem` that gave it its entry on the
    snapshot's main.

    Only the problem's contribution commits (by their record) are compared, and the walk stops
    as soon as every path is attributed. A path whose content on main a merge composed
    from several contributions goes to the newest contribution that changed it.
    """
    owners: dict[str, str] = {}
    touched: dict[str, str] = {}  # newest change, for content a merge composed from several
    for info in snapshot.log(problem):
        commit = snapshot.commit(info.id)
        parent = commit.parents[0].tree if commit.parents else None
        for path, entry in paths.items():
            mine = trees.lookup(commit.tree, path)
            if path in owners or trees.lookup(parent, path) == mine:
                continue
            touched.setdefault(path, info.id)
            if mine == entry:
                owners[path] = info.id
        if len(owners) == len(paths):
            break
    return {**touched, **owners}

