"""`gitswarm problems ...`: check, list and import problem sets."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import Exit, fail, user_errors

app = typer.Typer(help="Check, list and import problem sets (folders of `<id>.md` files).",
                  no_args_is_help=True, rich_markup_mode=None, add_completion=False)

SetArg = Annotated[str, typer.Argument(
    metavar="SET", help="Problem-set folder, e.g. problems/imo (or the name of a shipped set: answers, demo, "
                        "imo, programs, reproduce).", show_default=False)]


class Format(StrEnum):
    imo_proofbench = "imo-proofbench"
    imo_answerbench = "imo-answerbench"
    jsonl = "jsonl"
    gsm8k = "gsm8k"
    programbench = "programbench"


class OnError(StrEnum):
    refuse = "refuse"
    skip = "skip"


@app.command()
def check(
    directory: SetArg,
    static: Annotated[bool, typer.Option(
        "--static", help="Check the files only: do not build reproduce references or run their tests.")] = False,
    timeout: Annotated[float, typer.Option(
        "--compile-timeout", min=1, metavar="SECONDS",
        help="Bound on building each reproduce reference.")] = 900.0,
) -> None:
    """Validate a problem set; report its defects with file, line and what to do.

    Every defect of the files first; once they are clean, reproduce problems are run (solve
    runs the same checks before its first model call): the reference must build and pass
    every counted test, and an empty program must pass none (a test it passes is reported as
    dummy_pass).
    Exit 0 when the set is clean, 2 when it has defects.
    """
    from gitswarm.problems.loader import check_set
    from gitswarm.resources import resolve_set

    problem_set, defects = check_set(resolve_set(directory))
    if not defects and not static and problem_set is not None:
        defects = run_checks(problem_set.problems, timeout)
    for defect in defects:
        typer.echo(str(defect), err=True)
    if defects:
        raise fail(f"{len(defects)} defect(s) in {directory}; fix them and run the check again")
    assert problem_set is not None
    kinds: dict[str, int] = {}
    for p in problem_set.problems:
        kinds[p.kind.value] = kinds.get(p.kind.value, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    typer.echo(f"{problem_set.path}: {len(problem_set.problems)} problems ({summary}), no defects")


def run_checks(problems, timeout: float) -> list:
    """Build and run every reproduce problem of `problems` (the checks that need no model; `solve`
    runs them too before its first call); the sandbox failing to start is exit 1."""
    from gitswarm.problems.model import Kind
    from gitswarm.referee.reproduce import ReproduceGradingError
    from gitswarm.referee.reproduce_check import check_problem
    from gitswarm.sandbox import SandboxError

    defects = []
    for problem in problems:
        if problem.kind is not Kind.REPRODUCE:
            continue
        try:
            defects += check_problem(problem, compile_timeout=timeout)
        except ReproduceGradingError as exc:
            raise fail(str(exc)) from None
        except SandboxError as exc:
            raise fail(f"cannot run {problem.id} in the sandbox ({exc}); check again with --static "
                       "to check the files only", Exit.FAILED) from None
    return defects


@app.command("list")
def list_(
    directory: SetArg,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, for scripts.")] = False,
) -> None:
    """List the problems of a set: id, kind, title, source."""
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.resources import find_set

    with user_errors():
        try:
            problem_set = load_set(find_set(directory))
        except ProblemSetError as exc:  # caught before user_errors would: the set as typed, and what lists its defects
            raise fail(f"{directory} has {len(exc.defects)} defect(s); run `gitswarm problems check "
                       f"{directory}` to see them") from None
    rows = [{"id": p.id, "kind": p.kind.value, "title": p.title, "source": p.source}
            for p in natural(problem_set.problems, key=lambda p: p.id)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    widths = {k: max([len(k)] + [len(r[k]) for r in rows]) for k in ("id", "kind", "title")}
    widths["title"] = min(widths["title"], 48)
    head = "  ".join(k.upper().ljust(widths[k]) for k in widths) + "  SOURCE"
    typer.echo(head)
    for r in rows:
        cells = [r[k][: widths[k]].ljust(widths[k]) for k in widths]
        typer.echo("  ".join(cells) + "  " + r["source"])


@app.command("import")
def import_(
    fmt: Annotated[Format, typer.Argument(metavar="FORMAT", help="Source format.")],
    source: Annotated[Path, typer.Argument(help="The CSV or JSONL file to import (programbench: the "
                                                "task folder, tasks/<instance_id>).",
                                           show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the problem set to.",
                                      show_default=False)],
    level: Annotated[str | None, typer.Option(
        help="imo-proofbench only: keep problems of this Level (e.g. 'IMO-easy').")] = None,
    on_error: Annotated[OnError, typer.Option(
        help="A malformed row: 'refuse' writes nothing, 'skip' imports the rest. Either way "
             "each bad row is reported by its row number.")] = OnError.refuse,
    overwrite: Annotated[bool, typer.Option(help="Replace problem files that exist.")] = False,
    field: Annotated[list[str] | None, typer.Option(
        "--field", metavar="TARGET=PATH", help="jsonl, gsm8k: which key holds a part of the problem, "
        "repeatable. TARGET is id, problem, answer, solution, source or title; PATH a key or a dotted "
        "path into nested objects (a number indexes a list), e.g. --field problem=question "
        "--field answer=final.value.", show_default=False)] = None,
    answer_after: Annotated[str | None, typer.Option(
        "--answer-after", metavar="MARKER", help="jsonl, gsm8k: the answer is what follows the last MARKER "
        "in the answer field, the text before it the hidden solution (gsm8k: '####').",
        show_default=False)] = None,
    id_prefix: Annotated[str | None, typer.Option(
        "--id-prefix", metavar="PREFIX", help="jsonl, gsm8k: records without ids get <PREFIX>-<line "
        "number as 4 digits>, e.g. gsm8k-0001 (default: the --out folder's name).",
        show_default=False)] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", metavar="N", min=1, help="Keep the first N records of the file (a malformed one "
        "counts); the ones after them are not checked. Ids stay as in a whole import.",
        show_default=False)] = None,
    reference: Annotated[Path | None, typer.Option(
        "--reference", metavar="EXE", help="programbench only: the task's reference executable "
        "(the public harness ships it inside its Docker images).", show_default=False)] = None,
    docs: Annotated[Path | None, typer.Option(
        "--docs", metavar="DIR", help="programbench only: the folder of the program's documentation.",
        show_default=False)] = None,
    executable: Annotated[str | None, typer.Option(
        "--executable", metavar="NAME", help="programbench only: the program's name (default: the "
        "repository's name).", show_default=False)] = None,
    image: Annotated[str | None, typer.Option(
        "--image", metavar="IMAGE", help="programbench only: the task's image (its :task_cleanroom), whose "
        "./executable is the reference (run there, never copied out) and whose workspace holds the docs; "
        "grading runs in the same name's :task. Instead of --reference and --docs.", show_default=False)] = None,
    registry: Annotated[str | None, typer.Option(
        "--registry", metavar="REGISTRY", help="programbench only: take the images from the instance id "
        "(the task folder's name) under REGISTRY, as the official harness names them: "
        "REGISTRY/<org>_1776_<repo>:task_cleanroom and :task (e.g. --registry programbench).",
        show_default=False)] = None,
) -> None:
    """Import a public benchmark file into a problem set folder.

    Formats: imo-proofbench (IMO-ProofBench CSV), imo-answerbench (IMO-AnswerBench CSV),
    jsonl (one object per line; by default {"id", "problem", "answer"}, as AIME-style sets
    use; any other layout with --field and --answer-after), gsm8k (GSM8K's {"question",
    "answer": "<worked solution> #### 18"}: the number after #### is the answer key, the
    worked solution without its <<...>> annotations is hidden), programbench (a task
    folder with task.yaml, tests.json and tests/<branch>/; needs --reference and --docs, or
    the task's image: --image, or --registry to name it from the instance id).

    A number written with thousands commas (1,200) is stored as 1200. Every malformed
    record is reported with its file and row (its line in a JSONL file). Exit 0 when all
    was imported, 1 when --on-error skip left some records out, 2 on bad input (nothing
    written).
    """
    from gitswarm.problems import importers

    if limit is not None and fmt is Format.programbench:
        raise fail("--limit is for files of records; a programbench task is one problem")
    if (field or answer_after is not None or id_prefix is not None) and fmt.value not in importers.MAPPED:
        raise fail("--field, --answer-after and --id-prefix are for the jsonl and gsm8k formats only")
    if fmt is Format.programbench:
        from gitswarm.cli.problems_task import import_task_folder, task_images

        import_task_folder(source, out, reference, docs, executable, overwrite,
                           task_images(source, image, registry, reference, docs))
        return
    if reference or docs or executable or image or registry:
        raise fail("--reference, --docs, --executable, --image and --registry are for the programbench format only")

    if not source.is_file():
        raise fail(f"{source}: " + ("not a file; give the CSV or JSONL file to import" if source.exists()
                                    else "no such file; check the path"))
    if out.exists() and not out.is_dir():
        raise fail(f"{out} is a file; --out must be a folder (it is created when missing)")
    with user_errors():
        try:
            fields = (importers.MAPPED[fmt.value].with_fields(field or [], answer_after)
                      if field or answer_after is not None else None)
            result = importers.import_file(fmt.value, source, out, level=level, on_error=on_error.value,
                                           overwrite=overwrite, fields=fields, id_prefix=id_prefix,
                                           limit=limit)
        except importers.ImportRefused as exc:
            for error in exc.errors:
                typer.echo(_row(source, error), err=True)
            raise fail(f"{len(exc.errors)} malformed row(s); nothing written. Fix them, or pass "
                       "--on-error skip to import the other rows") from None
    for error in result.skipped:
        typer.echo(_row(source, error) + " (skipped)", err=True)
    typer.echo(f"wrote {len(result.written)} problems to {out}"
               + (f"; skipped {len(result.skipped)} malformed row(s)" if result.skipped else ""))
    _import_notes(result)
    if result.skipped:
        raise typer.Exit(int(Exit.FAILED))


def _import_notes(result) -> None:
    """Say which ids were changed, and how, and which problems came without their figure."""
    from gitswarm.problems.importers import ID_RULE

    if result.renamed:
        pairs = list(natural(result.renamed.items(), key=lambda pair: pair[1]))
        shown = ", ".join(f"{given} -> {pid}" for given, pid in pairs[:5])
        more = f" (and {len(pairs) - 5} more; each file's id: field holds its id)" if len(pairs) > 5 else ""
        typer.echo(f"ids changed to make file names ({ID_RULE}): {shown}{more}")
    if result.without_figure:
        ids = ", ".join(natural(result.without_figure))
        typer.echo(f"gitswarm: warning: {len(result.without_figure)} problem(s) come with a figure that was not "
                   f"imported: {ids}. Their statements may not be solvable without it: describe the figure in "
                   "the statement, or delete those files", err=True)


def natural(items, key=lambda item: item):
    """`items` sorted in natural order: problem-2 before problem-10."""
    import re

    def parts(item) -> list:
        return [(0, int(part), "") if part.isdigit() else (1, 0, part.lower())
                for part in re.split(r"(\d+)", str(key(item))) if part]

    return sorted(items, key=parts)


def _row(source: Path, error) -> str:
    who = f" ({error.problem_id})" if error.problem_id else ""
    return f"{source}: row {error.row}{who}: {error.message}"
