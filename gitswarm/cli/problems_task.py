"""`gitswarm problems import programbench`: one ProgramBench task folder into one reproduce
problem, its reference and docs given as files or taken from the task's image, then checked as
`gitswarm problems check` checks it."""

from __future__ import annotations

from pathlib import Path

import typer

from gitswarm.cli.common import Exit, fail, user_errors
from gitswarm.cli.problems import run_checks


def task_images(task: Path, image: str | None, registry: str | None, reference: Path | None, docs: Path | None):
    """The task's images, from --image or --registry (None: neither was given)."""
    from gitswarm.problems.taskimage import TaskImages, derived, grading_of

    if image and registry:
        raise fail("give --image or --registry, not both")
    if (image or registry) and (reference or docs):
        raise fail("--image and --registry take the reference and docs from the image: leave out --reference "
                   "and --docs")
    images = TaskImages(image, grading_of(image)) if image else derived(task.resolve().name, registry) \
        if registry else None
    if images is not None:  # both here before anything is written, or what to do
        from gitswarm.sandbox.container import image as image_of
        from gitswarm.sandbox.engines import EngineError

        try:
            for name in dict.fromkeys((images.image, images.grade_image)):
                image_of(name)
        except EngineError as exc:
            raise fail(str(exc), Exit.FAILED) from None
    return images


def import_task_folder(task: Path, out: Path, reference: Path | None, docs: Path | None,
                 executable: str | None, overwrite: bool, images=None) -> None:
    """`problems import programbench`: one task folder into one reproduce problem."""
    from gitswarm.problems.programbench import TaskDefects, import_task

    if images is None and (reference is None or docs is None):
        raise fail("the programbench format needs --reference EXE (the task's reference executable) "
                   "and --docs DIR (the program's documentation), or the task's image (--image IMAGE, or "
                   "--registry REGISTRY to name it from the instance id)")
    if not task.is_dir():
        raise fail(f"{task}: not a folder; give a ProgramBench task folder (tasks/<instance_id>) "
                   "holding task.yaml and tests.json")
    if out.exists() and not out.is_dir():
        raise fail(f"{out} is a file; --out must be a folder (it is created when missing)")
    with user_errors():
        try:
            imported = import_task(task, reference, docs, out, executable=executable, overwrite=overwrite,
                                   images=images)
        except TaskDefects as exc:
            for defect in exc.defects:
                typer.echo(str(defect), err=True)
            raise fail(f"{len(exc.defects)} defect(s) in the task {task}; nothing written") from None
    suite = imported.suite
    typer.echo(f"wrote {imported.problem_file}: {len(suite.branches)} branches, {suite.total} counted "
               f"tests ({sum(len(b.tests) for b in suite.branches) - suite.total} ignored)")
    if images is not None:
        listed = ", ".join(imported.docs[:10]) + (f" and {len(imported.docs) - 10} more" if len(imported.docs) > 10
                                                   else "")
        typer.echo(f"images: {images.image} (the reference, its ./executable, stays there), grading in "
                   f"{images.grade_image}; docs from its workspace: {listed or 'none'}")
    if imported.without_code:
        typer.echo(f"gitswarm: {len(imported.without_code)} branch(es) have no test code in {task}/tests "
                   f"(first: {imported.without_code[0]}): the problem cannot be graded until "
                   "<branch>/eval/tests/ is there; `gitswarm problems check` lists them", err=True)
        raise typer.Exit(int(Exit.FAILED))
    check_imported(imported.problem_file)


def check_imported(problem_file: Path) -> None:
    """Run `problems check`'s checks on the problem just written, and say what they found: the
    reference passes every counted test, an empty program passes none (exit 1 when not)."""

    from gitswarm.problems.loader import check_set

    problem_set, found = check_set(problem_file.parent)
    folder = problem_file.with_suffix("")
    defects = [d for d in found if d.path == problem_file or d.path.is_relative_to(folder)]
    ours = [p for p in problem_set.problems if p.path == problem_file] if problem_set else []
    if not defects and problem_set is not None and ours:
        defects = run_checks(ours, 900.0)
    for defect in defects:
        typer.echo(str(defect), err=True)
    if defects:
        typer.echo(f"gitswarm: {len(defects)} defect(s) in the imported problem: it is written, but grades "
                   f"would mislead until they are fixed; `gitswarm problems check {problem_file.parent}` "
                   "checks again", err=True)
        raise typer.Exit(int(Exit.FAILED))
    typer.echo("checked as `gitswarm problems check` does: the reference passes every counted test, "
               "an empty program passes none")
