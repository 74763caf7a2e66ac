"""The candidate's tree as ProgramBench's `eval.py` prepares it before any test: a fresh copy,
every file of a clean hash (the reference's, the problem's `eval_clean_hashes`) and a stale
`./executable` deleted, then `compile.sh` run in the sandbox and the executable it made moved
aside (the stash) for the test branches (`referee.reproduce`, steps 1 and 2)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gitswarm.errors import BadInput
from gitswarm.referee.builds import Step, compile_limits, regular_file, sha256, step_of
from gitswarm.sandbox import run

COMPILE = ["/bin/sh", "-c", "chmod +x ./compile.sh && ./compile.sh"]
EXECUTABLE = "executable"


def copy_candidate(candidate: Path | dict[str, bytes], tree: Path) -> None:
    """A fresh copy of the candidate: a folder (symlinks kept as links, `.git` left out), or files."""
    if isinstance(candidate, Path):
        shutil.copytree(candidate, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return
    tree.mkdir(parents=True)
    for name, data in candidate.items():
        path = tree / name
        if not path.resolve().is_relative_to(tree.resolve()):
            raise BadInput(f"candidate file {name!r} lies outside its folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if data.startswith(b"#!"):
            path.chmod(0o755)


def remove_clean(tree: Path, clean: set[str]) -> list[str]:
    """Delete every regular file of `tree` whose sha256 is in `clean`; return their paths."""
    removed = []
    for folder, _dirs, names in os.walk(tree):
        for name in names:
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink() and sha256(path.read_bytes()) in clean:
                path.unlink()
                removed.append(f"removed {path.relative_to(tree).as_posix()} (a clean hash)")
    return removed


def remove_stale(tree: Path) -> list[str]:
    """Delete a `./executable` the candidate shipped: compile.sh must build it (ProgramBench
    v1.2.4, after a submission smuggled in a prebuilt binary)."""
    stale = tree / EXECUTABLE
    if not os.path.lexists(stale):
        return []
    if stale.is_dir() and not stale.is_symlink():
        shutil.rmtree(stale)
    else:
        stale.unlink()
    return [f"removed {EXECUTABLE} (a stale build: compile.sh must make it)"]


def compile_tree(tree: Path, clean: set[str], timeout: float, steps: list[Step],
                 hide: tuple[Path, ...], stash: Path) -> str | None:
    """Run compile.sh in `tree` and move the executable it made to `stash`; None, or the error code."""
    if not (tree / "compile.sh").is_file():
        return "no_compile_script"
    result = run(COMPILE, workdir=tree, limits=compile_limits(timeout), hide=hide)
    steps.append(step_of("compile", result))
    if not result.ok:
        return "compile_failed"
    built = regular_file(tree, EXECUTABLE)
    if built is None:
        return "no_executable"
    data = built.read_bytes()
    if sha256(data) in clean:
        return "reference_copy"
    stash.parent.mkdir(parents=True, exist_ok=True)
    stash.write_bytes(data)
    built.unlink()
    return None
