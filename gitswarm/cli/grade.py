"""`gitswarm grade RUN`: grade the selected solutions (or every candidate) against the hidden parts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gitswarm.cli.common import Effort, Exit, fail, user_errors

if TYPE_CHECKING:
    from gitswarm.memory.repo import Memory
    from gitswarm.problems.model import Problem
    from gitswarm.referee.grade import Outcome


def grade(
    run: Annotated[Path | None, typer.Argument(
        metavar="RUN", help="The run folder, e.g. runs/imo (not with --candidate).", show_default=False)] = None,
    problem: Annotated[list[str] | None, typer.Option(
        "--problem", metavar="ID", help="Grade only this problem id (repeat the option for several).",
        show_default=False)] = None,
    all_: Annotated[bool, typer.Option(
        "--all", help="Grade every candidate (each attempt, or each code folder), not only the "
                      "selected solution.")] = False,
    referee_model: Annotated[str | None, typer.Option(
        "--referee-model", envvar="GITSWARM_REFEREE_MODEL", metavar="MODEL",
        help="litellm model string of the referee: judges proofs, and answers the symbolic "
             "check cannot decide. Needed for proof problems.", show_default=False)] = None,
    api_base: Annotated[str | None, typer.Option(
        "--api-base", metavar="URL", help="Base URL of an OpenAI-compatible server for the referee model.",
        show_default=False)] = None,
    reasoning_effort: Annotated[Effort | None, typer.Option(
        help="The referee's reasoning effort (default: reasoning_effort in the config file's [grade] "
             "table, else the model's own).", show_default=False)] = None,
    k: Annotated[int, typer.Option(
        "--judgments", min=1, max=15, metavar="K",
        help="Independent judgments per proof; the score is their median.")] = 3,
    force: Annotated[bool, typer.Option(
        "--force", help="Grade again even where a grade is stored (the old one stays in the "
                        "history of refs/gitswarm/grades).")] = False,
    problem_set: Annotated[Path | None, typer.Option(
        "--set", metavar="DIR", help="Problem-set folder holding the hidden parts (default: the set the run "
                      "was made from, by its name).", show_default=False)] = None,
    candidate: Annotated[Path | None, typer.Option(
        "--candidate", metavar="DIR", help="Grade this folder, outside any run, against --set and "
        "--problem (a reproduce or program problem); nothing is stored.", show_default=False)] = None,
    compile_timeout: Annotated[float | None, typer.Option(
        "--compile-timeout", min=1, metavar="SECONDS",
        help="Bound on a reproduce candidate's compile.sh (default: compile_timeout in the config file's "
             "[grade] table, else 900, ProgramBench's).", show_default=False)] = None,
    branch_timeout: Annotated[float | None, typer.Option(
        "--branch-timeout", min=1, metavar="SECONDS",
        help="Bound on each test branch of a reproduce problem (default: branch_timeout in the config "
             "file's [grade] table, else 2400, ProgramBench's).", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="With --candidate: the grade as one JSON "
                                          "object, for scripts.")] = False,
) -> None:
    """Grade each problem's selected solution against the hidden answer, tests or reference.

    Grades are stored in the run under refs/gitswarm/grades (agents never read it); grading
    again is free: a stored grade is shown, not recomputed, unless --force. With --candidate
    DIR --set SET --problem ID, grade one folder outside any run, as ProgramBench grades.
    Exit 0 when everything asked was graded, 1 when something stayed ungraded, 2 on bad input.
    """
    import anyio

    from gitswarm.engine.settings import config_file, grade_settings, merge_grade

    with user_errors():
        settings = merge_grade({"referee_model": referee_model, "api_base": api_base,
                                "reasoning_effort": reasoning_effort, "compile_timeout": compile_timeout,
                                "branch_timeout": branch_timeout}, grade_settings(config_file()))
    timeouts = (settings.compile_timeout, settings.branch_timeout)
    if candidate is not None:
        from gitswarm.cli.grade_folder import grade_folder

        if run is not None:
            raise fail("give either a run folder or --candidate DIR, not both")
        grade_folder(candidate, problem_set, problem, timeouts, as_json)
        return
    if run is None:
        raise fail("give the run folder to grade (e.g. runs/imo), or --candidate DIR with --set and "
                   "--problem to grade a folder outside any run")

    from gitswarm.memory.repo import Memory

    with user_errors():
        memory = Memory(run)
        problems = _problems(memory, problem_set, problem)
        judge = judge_for(settings)
    code = anyio.run(grade_and_print, memory, problems, judge, k, force, all_, *timeouts)
    if code:
        raise typer.Exit(code)


async def grade_and_print(memory: Memory, problems: list[Problem], judge, k: int = 3, force: bool = False,
                          all_: bool = False, compile_timeout: float = 900.0,
                          branch_timeout: float = 2400.0) -> int:
    """Grade, print a line per grade (and the reproduce mean), and return the exit code: 0
    when everything asked was graded, 1 when something stayed ungraded, 2 on bad input."""
    with user_errors():  # storing a grade can meet a full disk or a read-only run
        outcomes, errors = await grade_all(memory, problems, judge, k, force, all_, compile_timeout,
                                           branch_timeout)
    _print(outcomes, {p.id: p.kind.value for p in problems})
    _mean(outcomes, [p.id for p in problems if p.kind.value == "reproduce"])
    for message, _ in errors:
        typer.echo(f"gitswarm: {message}", err=True)
    if errors:
        worst = max(code for _, code in errors)
        # Exit 2 is bad input with nothing graded; once another problem has its grade (stored now or
        # earlier), the problems left ungraded are "something left ungraded": exit 1.
        graded = any(o.grade is not None for o in outcomes)
        return int(Exit.FAILED if worst == Exit.BAD_INPUT and graded else worst)
    return int(Exit.FAILED) if any(o.grade is not None and not o.grade.graded for o in outcomes) else 0


def _problems(memory: Memory, set_path: Path | None, wanted: list[str] | None) -> list[Problem]:
    """The run's problems with their hidden parts, from the problem set."""
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.resources import resolve_set

    in_run = memory.problems()
    unknown = [p for p in wanted or [] if p not in in_run]
    if unknown:
        raise fail(f"no problem {unknown[0]!r} in this run (it has: {', '.join(in_run)})")
    recorded = memory.meta.get("set_path")
    source = set_path or (Path(recorded) if recorded and Path(recorded).is_dir() else None) \
        or resolve_set(memory.meta.get("set", ""))
    try:
        loaded = load_set(source)
    except ProblemSetError as exc:
        raise fail(f"cannot load the problem set {str(source)!r} with the hidden parts "
                   f"({exc.defects[0]}); pass --set DIR") from None
    by_id = {p.id: p for p in loaded.problems}
    ids = wanted or in_run
    missing = [p for p in ids if p not in by_id]
    if missing:
        raise fail(f"the problem set {loaded.path} has no problem {missing[0]!r}; pass the set "
                   "the run was made from with --set DIR")
    return [by_id[p] for p in ids]


def judge_for(settings):
    """The referee model of a GradeConfig, or None when no referee model is given."""
    if not settings.referee_model:
        return None
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.models.credentials import credentials_hint

    hint = credentials_hint(settings.referee_model, api_base=settings.api_base)
    if hint:
        raise fail(hint)
    return LiteLLMModel(ModelConfig(settings.referee_model, api_base=settings.api_base,
                                    reasoning_effort=settings.reasoning_effort))


async def grade_all(memory: Memory, problems: list[Problem], judge, k: int, force: bool,
                     all_: bool, compile_timeout: float,
                     branch_timeout: float = 2400.0) -> tuple[list[Outcome], list[tuple[str, Exit]]]:
    """Grade problem by problem; a problem that cannot be graded does not stop the others."""
    from gitswarm.models.errors import ModelError
    from gitswarm.referee.candidates import CandidateError
    from gitswarm.referee.grade import GradingError, Outcome, grade_problem
    from gitswarm.sandbox import SandboxError

    outcomes, errors = [], []
    for problem in problems:
        try:
            outcomes += await grade_problem(memory, problem, judge_model=judge, k=k, force=force,
                                            all_candidates=all_, compile_timeout=compile_timeout,
                                            branch_timeout=branch_timeout)
        except (GradingError, CandidateError) as exc:
            outcomes.append(Outcome(problem.id, None, None, note="not graded (see below)"))
            errors.append((str(exc), Exit.BAD_INPUT))
        except ModelError as exc:  # auth, unknown model, quota: no judgment can succeed
            outcomes.append(Outcome(problem.id, None, None, note="not graded (see below)"))
            errors.append((f"the referee model failed on {problem.id}: {exc}", Exit.FAILED))
        except SandboxError as exc:  # no namespaces to contain a program here
            outcomes.append(Outcome(problem.id, None, None, note="not graded (see below)"))
            errors.append((f"cannot run {problem.id}'s candidate in the sandbox ({exc})", Exit.FAILED))
    return outcomes, errors


def _print(outcomes: list[Outcome], kinds: dict[str, str]) -> None:
    from gitswarm.domain.grade import describe

    rows = [("PROBLEM", "KIND", "CANDIDATE", "GRADER", "SCORE", "NOTE")]
    for o in outcomes:
        c, g = o.candidate, o.grade
        if c is None:
            continue
        note = ", ".join(n for n, on in (("selected", o.selected), ("stored earlier", o.reused)) if on)
        rows.append((o.problem, kinds.get(o.problem, ""), c.commit[:10],
                     (f"{g.grader} ({g.model})" if g.model else g.grader) if g else "-",
                     describe(g), note))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows if len(rows) > 1 else []:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
    for o in outcomes:
        if o.candidate is None and o.note:
            typer.echo(o.note if o.problem in o.note else f"{o.problem}: {o.note}")


def _mean(outcomes: list[Outcome], reproduce: list[str]) -> None:
    """The mean score of the graded reproduce problems: an unattempted one counts as 0."""
    if not reproduce:
        return
    from gitswarm.referee.reproduce import ALMOST_RESOLVED, RESOLVED, mean_score

    scores = {o.problem: o.grade.score for o in outcomes
              if o.selected and o.grade is not None and o.grade.score is not None}
    resolved = sum(scores.get(p, 0) >= RESOLVED for p in reproduce)
    almost = sum(scores.get(p, 0) >= ALMOST_RESOLVED for p in reproduce)
    typer.echo(f"reproduce: mean score {mean_score(scores, reproduce):.3f} over {len(reproduce)} problem(s) "
               f"(resolved {resolved}, almost resolved {almost}; unattempted count as 0)")
