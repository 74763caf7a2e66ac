"""`gitswarm grade --candidate DIR --set SET --problem ID`: grade one folder outside any run."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from gitswarm.cli.common import Exit, fail, user_errors
from gitswarm.errors import BadInput


def grade_folder(candidate: Path, set_path: Path | None, wanted: list[str] | None,
                 timeouts: tuple[float, float], as_json: bool) -> None:
    """Grade `candidate` against one reproduce (or program) problem; print it; store nothing."""
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.problems.model import Kind
    from gitswarm.resources import resolve_set

    if set_path is None or not wanted or len(wanted) != 1:
        raise fail("--candidate needs --set DIR and exactly one --problem ID to grade it against")
    if not candidate.is_dir():
        raise fail(f"{candidate}: not a folder; --candidate takes the folder of the candidate's code")
    with user_errors():
        try:
            problem = load_set(resolve_set(str(set_path))).get(wanted[0])
        except ProblemSetError as exc:
            raise fail(f"cannot load the problem set {str(set_path)!r} ({exc.defects[0]}); run "
                       f"`gitswarm problems check {set_path}`") from None
        except KeyError as exc:
            raise fail(str(exc.args[0])) from None
    if problem.kind is Kind.REPRODUCE:
        _reproduce(problem, candidate, timeouts, as_json)
    elif problem.kind is Kind.PROGRAM:
        _program(problem, candidate, as_json)
    else:
        raise fail(f"{problem.id} is a {problem.kind} problem: --candidate grades reproduce and program "
                   "problems; grade a run for the others")


def _reproduce(problem, candidate: Path, timeouts: tuple[float, float], as_json: bool) -> None:
    from gitswarm.referee.reproduce import ReproduceGradingError, grade_reproduce
    from gitswarm.sandbox import SandboxError

    try:
        result = grade_reproduce(problem, candidate, compile_timeout=timeouts[0], branch_timeout=timeouts[1])
    except ReproduceGradingError as exc:
        raise fail(str(exc)) from None
    except SandboxError as exc:
        raise fail(f"cannot grade in the sandbox ({exc})", Exit.FAILED) from None
    if as_json:
        typer.echo(json.dumps({"problem": problem.id, "candidate": str(candidate), **result.as_dict()},
                              indent=2, ensure_ascii=False))
        return
    verdict = "resolved" if result.resolved else "almost resolved" if result.almost_resolved else "not resolved"
    error = f"; {result.error_code}" if result.error_code else ""
    typer.echo(f"{problem.id}: {result.passed}/{result.total} tests passed, score {result.score:.3f} "
               f"({verdict}{error})")
    typer.echo("  " + ", ".join(f"{s} {n}" for s, n in result.statuses.items())
               + f"; executable sha256 {result.executable_hash or '-'}")
    for r in [r for r in result.results if r.status != "passed"][:10]:
        typer.echo(f"  {r.status:8} {r.name}" + (f": {' '.join(r.message.split())[:100]}" if r.message else ""))
    for warning in result.warnings:
        typer.echo(f"  warning: {warning}")


def _program(problem, candidate: Path, as_json: bool) -> None:
    from gitswarm.referee.programs import ProgramGradingError, grade_program

    files = {p.relative_to(candidate).as_posix(): p.read_bytes() for p in sorted(candidate.rglob("*"))
             if p.is_file() and ".git" not in p.relative_to(candidate).parts}
    try:
        result = grade_program(problem, files)
    except (ProgramGradingError, BadInput) as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"problem": problem.id, "candidate": str(candidate), "score": result.score,
                               "passed": result.passed, "total": result.total,
                               "resolved": result.resolved}, indent=2))
        return
    typer.echo(f"{problem.id}: {result.passed}/{result.total} tests passed, score {result.score:.3f}")
