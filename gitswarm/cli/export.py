"""`gitswarm export RUN`: a run's episodes as JSONL training data, labelled from its git."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal, TextIO

import typer

from gitswarm.cli.common import Exit, fail, run_folder, user_errors

Layout = Literal["chat", "steps", "programbench"]
CreditName = Literal["ancestry", "ancestry+reviews"]
"""gitswarm.export.credit.RULES' names, spelt out so `--help` does not import the exporter."""


def export(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/demo, or the git remote URL of a run "
                                       "there (read from a temporary copy).", show_default=False)],
    layout: Annotated[Layout, typer.Option(
        "--format", help="chat: one record per episode, `messages` (tool calls and the `tool` turns answering "
        "them by id) and `tools`, as OpenAI's and Hugging Face's fine-tuning tools read them. steps: one record "
        "per model call, the context it saw, its reply, its reward and return, for reinforcement learning. "
        "programbench: not records but submissions for ProgramBench's evaluator, "
        "<out>/<instance_id>/submission.tar.gz (and .zip) per reproduce problem with a selected codebase "
        "(--out is then a folder; `programbench eval <out>` grades them).")] = "chat",
    out: Annotated[Path | None, typer.Option(
        "--output", "-o", "--out", help="Write the JSONL to this file instead of stdout (-o/--output, as for "
        "report; --out too).", show_default=False)] = None,
    credit: Annotated[CreditName, typer.Option(
        help="How the selected solution's grade is credited: ancestry (it flows back along the citations, "
        "halving at each step, split among the cited commits; nothing outside), ancestry+reviews (plus credit "
        "to critical reviews of candidates graded low). Defined in gitswarm/export/credit.py.")] = "ancestry",
    problem: Annotated[str | None, typer.Option(help="Only this problem's episodes.", show_default=False)] = None,
    outcome: Annotated[str | None, typer.Option(
        help="Only episodes with this outcome: contributed, nominated, abstained, failed, stopped, running, or "
        "a failure class: failed:model, failed:provider, failed:engine.", show_default=False)] = None,
    min_grade: Annotated[float | None, typer.Option(
        help="Only episodes of problems whose selected solution was graded at least this fraction of the "
        "maximum (0 to 1); ungraded problems are left out.", min=0.0, max=1.0, show_default=False)] = None,
    ancestry_only: Annotated[bool, typer.Option(
        "--ancestry-only", help="Only episodes whose commit lies in the ancestry (citation closure) of the "
        "selected solution.")] = False,
) -> None:
    """Write a run's episodes as JSONL: each episode's whole conversation with its labels (run,
    problem, kind, worker, model, outcome and failure class, its contribution, the reviews and
    nominations it received, verified, selected, in the solution's ancestry, how many later
    commits built on it, the problem's grade, and its credit).

    \b
    Examples, on the demo's run:
      gitswarm export runs/demo --out demo.jsonl
      gitswarm export runs/demo --format steps --credit ancestry+reviews --out steps.jsonl
      gitswarm export runs/demo --ancestry-only --min-grade 1
      gitswarm export runs/programbench --format programbench --out submissions

    An episode of a run made before gitswarm kept each conversation whole is read from its
    readable transcript: its labels say `"lossless": false` and what is `missing` (tool call
    ids are then made up). Every label can be recomputed with git alone (docs/exports.md).
    """
    from gitswarm.engine.tools import tool_schemas
    from gitswarm.export.labels import read_facts
    from gitswarm.export.run import Filters
    from gitswarm.export.run import export as records
    from gitswarm.memory.repo import Memory

    if layout == "programbench":
        if outcome is not None or min_grade is not None or ancestry_only:
            raise fail("--format programbench writes each problem's selected codebase; --outcome, --min-grade "
                       "and --ancestry-only choose episodes, so they do not apply")
        if out is None:
            raise fail("--format programbench needs --out DIR: the folder to write <instance_id>/"
                       "submission.tar.gz in")
        return _submissions(run, out, problem)
    filters = Filters(problem, outcome, min_grade, ancestry_only)
    with user_errors(), run_folder(run) as folder:
        memory = Memory(folder)
        facts = read_facts(memory, credit)
        refused = filters.refusal(facts)
        if refused:
            raise fail(refused, Exit.BAD_INPUT)
        empty: list[str] = []
        count = 0
        with _sink(out) as sink:
            for record in records(memory, tool_schemas, layout, facts, filters, empty):
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    if empty:
        shown = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        typer.echo(f"gitswarm: {len(empty)} episode(s) left out, with nothing to export (cut off by a crash "
                   f"before their first reply): {shown}", err=True)
    if out is not None:
        typer.echo(f"gitswarm: wrote {count} {layout} record(s) to {out}", err=True)


def _submissions(run: str, out: Path, problem: str | None) -> None:
    """`--format programbench`: the run's selected reproduce codebases as submissions in `out`."""
    from gitswarm.export.submissions import write_submissions
    from gitswarm.memory.repo import Memory

    if out.exists() and not out.is_dir():
        raise fail(f"{out} is a file; with --format programbench, --out is a folder (created when missing)")
    with user_errors(), run_folder(run) as folder:
        memory = Memory(folder)
        if problem is not None and problem not in memory.problems():
            raise fail(f"no problem {problem!r} in this run; its problems: {', '.join(memory.problems())}")
        found = write_submissions(memory, out, problem)
    for instance in sorted(found.written):
        typer.echo(f"wrote {found.written[instance] / 'submission.tar.gz'}")
    for pid, why in sorted(found.without.items()):
        typer.echo(f"gitswarm: {pid}: no submission ({why})", err=True)
    typer.echo(f"gitswarm: {len(found.written)} submission(s) in {out}, {len(found.without)} reproduce "
               f"problem(s) without one; grade them with `programbench eval {out}`", err=True)
    if not found.written and not found.without:
        raise fail("this run has no reproduce problem to submit")


@contextmanager
def _sink(out: Path | None) -> Iterator[TextIO]:
    """stdout, or the --out file, written beside it and renamed when whole: a failed export
    leaves no file that looks finished."""
    if out is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    part = out.with_name(f".{out.name}.part")
    try:
        with part.open("w", encoding="utf-8") as file:
            yield file
        part.replace(out)
    finally:
        part.unlink(missing_ok=True)
