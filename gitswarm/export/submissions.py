"""Submissions for ProgramBench's official evaluator, from a run's selected codebases.

For each reproduce problem with a selected solution (`SOLUTION.md` naming a `code/<slug>`
folder), `<out>/<instance_id>/submission.tar.gz` holds that codebase's files at the
archive's root (`compile.sh`, not `code/<slug>/compile.sh`), as the evaluator unpacks a
submission into its workspace before it runs `chmod +x ./compile.sh && ./compile.sh`.
`submission.zip` beside it holds the same files: ProgramBench's `eval` has read that name
(restoring each file's mode from the zip), its submission tools `submission.tar.gz`.
Scripts (a file starting with `#!`) and `compile.sh` are written executable, other files
readable; every entry is a regular file with a fixed time and owner, so the same codebase
makes the same archive.

The instance id is ProgramBench's (`owner__repo.commit`), read from the statement's
`source` line that `problems import programbench` writes; for other problems, the problem id.
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from gitswarm.memory.repo import Memory
from gitswarm.problems.model import Kind
from gitswarm.readmodel.read import KIND
from gitswarm.referee.candidates import CandidateError, selected

ARCHIVE, ZIP = "submission.tar.gz", "submission.zip"
SOURCE = re.compile(r"^- source: ProgramBench task ([\w.-]+)/([\w.-]+)@([0-9a-f]{7})\b", re.M)
EPOCH = 946684800  # 2000-01-01, as the evaluator dates the commit it makes of a submission


@dataclass
class Submissions:
    """What an export wrote, and the reproduce problems it could not (with why)."""

    written: dict[str, Path] = field(default_factory=dict)
    """instance id -> the folder holding its archives."""
    without: dict[str, str] = field(default_factory=dict)
    """problem id -> why it has no submission."""


def write_submissions(memory: Memory, out: Path, only: str | None = None) -> Submissions:
    """Write a submission for each reproduce problem of the run (or `only` that one) below `out`."""
    found = Submissions()
    for problem in memory.problems():
        statement = (memory.read_file(f"problems/{problem}/statement.md") or b"").decode("utf-8", "replace")
        kind = KIND.search(statement)
        if (only is not None and problem != only) or kind is None or kind.group(1) != Kind.REPRODUCE:
            continue
        try:
            chosen = selected(memory, problem, Kind.REPRODUCE)
        except CandidateError as exc:
            found.without[problem] = str(exc)
            continue
        if chosen is None or not chosen.files:
            found.without[problem] = "no selected codebase"
            continue
        folder = out / instance_id(problem, statement)
        folder.mkdir(parents=True, exist_ok=True)
        _replace(folder / ARCHIVE, tarball(chosen.files))
        _replace(folder / ZIP, zipped(chosen.files))
        found.written[folder.name] = folder
    return found


def instance_id(problem: str, statement: str) -> str:
    """ProgramBench's id of the task a problem was imported from, else the problem id."""
    source = SOURCE.search(statement)
    return f"{source[1]}__{source[2]}.{source[3]}" if source else problem


def mode(name: str, data: bytes) -> int:
    """The file's mode in the archive: executable for compile.sh and scripts."""
    return 0o755 if name == "compile.sh" or data.startswith(b"#!") else 0o644


def tarball(files: dict[str, bytes]) -> bytes:
    """A gzipped tar of `files` (relative path -> content) at its root, in path order."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=EPOCH) as packed, \
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), mode(name, files[name]), EPOCH
            tar.addfile(info, io.BytesIO(files[name]))
    return buffer.getvalue()


def zipped(files: dict[str, bytes]) -> bytes:
    """A zip of `files` at its root, each entry's Unix mode in its external attributes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode(name, files[name])) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name])
    return buffer.getvalue()


def _replace(path: Path, data: bytes) -> None:
    """Write `path` whole: beside it first, then renamed, so no half archive looks finished."""
    part = path.with_name(f".{path.name}.part")
    part.write_bytes(data)
    part.replace(path)
