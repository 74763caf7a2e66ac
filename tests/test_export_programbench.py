"""`gitswarm export RUN --format programbench --out DIR`: a submission per reproduce problem
with a selected codebase, laid out as ProgramBench's evaluator unpacks it (the codebase's
files at the archive's root, compile.sh executable), named by the task's instance id; the
problems without one are named. A real run, the real CLI, the archives unpacked and graded.
"""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

from reproduce_fixture import CALCULATOR, CORRECT, reproduce_set, task_dir, write
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.memory import trees
from gitswarm.memory.repo import Memory
from gitswarm.memory.write import committer
from gitswarm.problems.frontmatter import render
from gitswarm.problems.loader import load_set
from gitswarm.problems.programbench import import_task
from gitswarm.referee.reproduce import grade_reproduce

runner = CliRunner()
CODEBASE = {**CORRECT, "src/README.md": "A calculator in sh.\n"}


def run_with_a_selection(tmp_path: Path) -> tuple[Path, Path]:
    """A run of two reproduce problems: the imported calculator task, with a selected codebase
    in `code/calc-sh/`, and the hand-written `calc`, with none."""
    folder = reproduce_set(tmp_path / "set")
    exe = write(tmp_path / "exe", {"calculator": "#!/bin/sh\n# the reference\necho $(($1 $2 $3))\n"}) / "calculator"
    import_task(task_dir(tmp_path / "tasks"), exe, write(tmp_path / "docs", {"README.md": "calc\n"}), folder)
    memory = Memory.create(tmp_path / "run", load_set(folder), run_id="pb-run")
    written = memory.contribute(Contribution(
        problem=CALCULATOR, episode="e1", worker="w01", kind="code", title="calculator in sh",
        files={f"code/calc-sh/{k}": v for k, v in CODEBASE.items()}, parent=memory.main(), op="op-e1"))
    memory.compose()
    path = f"problems/{CALCULATOR}/code/calc-sh"
    text = render({"problem": CALCULATOR, "candidate": written.commit, "path": path, "nominations": 2},
                  "Program files in `code/calc-sh/`")
    repo = memory.repo
    tip = repo[repo.references["refs/heads/main"].target]
    tree = trees.update(repo, tip.tree, trees.blobs(repo, {f"problems/{CALCULATOR}/SOLUTION.md": text.encode()}))
    repo.create_commit("refs/heads/main", committer(), committer(), "solution\n", tree, [tip.id])
    return tmp_path / "run", folder


def test_each_selected_codebase_becomes_a_submission_at_the_archives_root(tmp_path: Path) -> None:
    run, folder = run_with_a_selection(tmp_path)
    out = tmp_path / "submissions"
    result = runner.invoke(app, ["export", str(run), "--format", "programbench", "--out", str(out)])
    assert result.exit_code == 0, result.output
    archive = out / CALCULATOR / "submission.tar.gz"
    assert f"wrote {archive}" in result.stdout
    assert "calc: no submission (no selected codebase)" in result.stderr
    assert f"1 submission(s) in {out}, 1 reproduce problem(s) without one" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [CALCULATOR]
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == sorted(CODEBASE)  # at the root: no code/calc-sh/ prefix, no ./
        assert all(m.isfile() for m in members.values())
        assert members["compile.sh"].mode & stat.S_IXUSR and members["calculator.sh"].mode & stat.S_IXUSR
        assert not members["src/README.md"].mode & stat.S_IXUSR
        unpacked = tmp_path / "workspace"
        # Python 3.11 before 3.11.4 (Debian 12's 3.11.2) has no extraction filters; every member is checked above.
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(unpacked, **safe)
    assert {p.relative_to(unpacked).as_posix(): p.read_text() for p in unpacked.rglob("*") if p.is_file()} \
        == CODEBASE
    grade = grade_reproduce(load_set(folder).get(CALCULATOR), unpacked)
    assert (grade.score, grade.resolved) == (1.0, True)


def test_the_zip_beside_it_keeps_the_same_files_and_modes(tmp_path: Path) -> None:
    run, _ = run_with_a_selection(tmp_path)
    out = tmp_path / "submissions"
    assert runner.invoke(app, ["export", str(run), "--format", "programbench", "--out", str(out)]).exit_code == 0
    with zipfile.ZipFile(io.BytesIO((out / CALCULATOR / "submission.zip").read_bytes())) as archive:
        assert {i.filename: archive.read(i).decode() for i in archive.infolist()} == CODEBASE
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in archive.infolist()}
    assert modes == {"calculator.sh": 0o755, "compile.sh": 0o755, "src/README.md": 0o644}
    again = tmp_path / "again"
    runner.invoke(app, ["export", str(run), "--format", "programbench", "--out", str(again)])
    assert (again / CALCULATOR / "submission.tar.gz").read_bytes() == \
        (out / CALCULATOR / "submission.tar.gz").read_bytes()  # the same codebase, the same archive


def test_programbench_format_needs_a_folder_and_takes_no_episode_filters(tmp_path: Path) -> None:
    run, _ = run_with_a_selection(tmp_path)
    result = runner.invoke(app, ["export", str(run), "--format", "programbench"])
    assert result.exit_code == 2 and "needs --out DIR" in result.stderr
    result = runner.invoke(app, ["export", str(run), "--format", "programbench", "--out", str(tmp_path / "o"),
                                 "--min-grade", "1"])
    assert result.exit_code == 2 and "do not apply" in result.stderr
    result = runner.invoke(app, ["export", str(run), "--format", "programbench", "--out", str(tmp_path / "o"),
                                 "--problem", "calc"])
    assert result.exit_code == 0 and "calc: no submission" in result.stderr and not (tmp_path / "o").exists()
