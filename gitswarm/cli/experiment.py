"""`gitswarm experiment SPEC.toml`: the same problems, model and budget spent in different ways
(arms), each arm × seed an ordinary run, resumable; `--report` compares the arms."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import Exit, fail, user_errors
from gitswarm.cli.report import Format
from gitswarm.cli.solve import TuiOpt


def experiment(
    spec: Annotated[Path, typer.Argument(metavar="SPEC.toml", help="The experiment's spec (format below).",
                                         show_default=False)],
    parallel: Annotated[int, typer.Option(
        "--parallel", "-j", min=1, metavar="N", help="Runs at once, in this process (default 1).")] = 1,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="The experiment's folder (default experiments/<spec name>).",
        show_default=False)] = None,
    tui: TuiOpt = None,
    report: Annotated[bool, typer.Option(
        "--report", help="Run nothing: compare the arms' runs as they stand.")] = False,
    fmt: Annotated[Format, typer.Option(
        "--format", "-f", help="With --report: md, json or html (html plots score against tokens; needs "
                               "the `report` extra).")] = Format.md,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="With --report: write to this file instead of stdout.", show_default=False)] = None,
) -> None:
    """Does the swarm beat simpler inference at equal budget? Run every arm × seed of SPEC.toml
    that is not finished, then `--report` to compare the arms.

    Each arm × seed is an ordinary run in <experiment>/runs/<arm>-s<seed> (read it with git log,
    `gitswarm status`, `gitswarm report`); experiment.json lists the runs and their state.
    With tokens = "smallest", once every arm of a seed ran its episodes, each arm that spent
    more tokens than the cheapest (T) runs again under a cap of T in runs/<arm>-s<seed>-at-<T>,
    and that run stands for it in the report.
    Ctrl-C stops (once: the episodes in flight finish); the same command resumes and runs only
    what is missing. After each run its selected solutions are graded (answer keys and hidden
    tests need no model; proofs need [grade] referee_model, else they stay ungraded).

    The spec (TOML; paths relative to it):

    \b
      name = "answers-p03"         # optional; default: the file's name
      problems = "answers"         # a set folder, or a shipped set's name
      seeds = [0, 1]               # one run per arm and seed (seed: the run's seed)
      baseline = "independent"     # the arm the others are compared with (default: the first)
      [budget]                     # held equal: exactly one of
      episodes = 24                #   episodes of any outcome per run, or
      # tokens = 400000            #   tokens per run (in + out, every call), or
      # tokens = "smallest"        #   with episodes: equal tokens, the cheapest arm's
      [solve]                      # the model and its settings: a config file's [solve] keys
      model = "scripted-solver"    # or a litellm model string, e.g. "openai/gpt-5.5"
      workers = 4
      [scripted]                   # only for the scripted solver, a simulator
      p = 0.3                      #   chance an attempt is right (boost, check: docs/experiments.md)
      [grade]                      # optional: the referee for proof problems
      # referee_model = "openai/gpt-5.5"
      [arms]                       # name = settings over [solve] (SolveConfig fields)
      swarm = {}
      single = {workers = 1, verify = 0}
      independent = {isolation = "independent"}

    The scripted solver (model = "scripted-solver") shows the mechanics without an API key;
    its figures are never evidence about real models.

    Exit 0 when every run finished, 1 when a run ended by the provider or gitswarm failing
    (its figures measure that, not the arm), 2 on a bad spec, 130 when stopped by Ctrl-C.
    """
    from gitswarm.experiment.spec import load_spec

    with user_errors():
        loaded = load_spec(spec, out)
    if report:
        _report(loaded, fmt, output)
        return
    if output is not None or fmt is not Format.md:
        raise fail("--format and --output go with --report")
    want_tui = tui if tui is not None else sys.stdout.isatty()
    if want_tui and parallel > 1:
        raise fail("the dashboard shows one run at a time: give --no-tui with --parallel")
    runner = runner_for(loaded, parallel, _checked_judge(loaded))
    raise typer.Exit(_dashboards(runner) if want_tui else _plain(runner))


def _checked_judge(spec):
    """The referee model of the spec's [grade] (None without one), after the credentials check."""
    from gitswarm.cli.grade import judge_for
    from gitswarm.cli.running import missing_credentials

    if spec.scripted is None:
        hint = next(filter(None, (missing_credentials(run.config.models) for run in spec.runs)), None)
        if hint:
            raise fail(hint)
    return judge_for(spec.grade)


def runner_for(spec, parallel: int, judge):
    """The experiment's Runner: each run through the engine as `solve` runs it (against the
    scripted solver on a fake server of its own, when the spec names it), graded as `grade` does."""
    from functools import partial

    import anyio

    from gitswarm.cli.grade import grade_all
    from gitswarm.cli.running import RemoteRun, run_engine
    from gitswarm.core.control import Control
    from gitswarm.demo.solver import Solver
    from gitswarm.engine.runlock import clear_stale_locks, run_lock
    from gitswarm.experiment.runner import Runner
    from gitswarm.fakeserver import serve
    from gitswarm.memory.repo import Memory

    answers = {p.id: p.answer for p in spec.problem_set.problems if p.kind == "answer" and p.answer}

    async def start(plan, control, listeners):
        fake = None
        if spec.scripted is not None:  # the test double is handed the keys; the engine never is
            fake = partial(serve, Solver(answers, spec.scripted, seed=plan.seed))
        return await run_engine(plan.config, spec.problem_set, listeners, control, fake, on_remote(plan))

    def on_remote(plan) -> RemoteRun | None:
        """With the spec's [remote], the plan's run coordinated on its own remote repository."""
        if spec.remote is None:
            return None
        url = spec.remote.ready(plan.name)
        local = spec.remote.local_workers if spec.remote.local_workers is not None else plan.config.workers
        runner.say(f"{plan.name}: coordinated on {url}; more workers join it with: gitswarm worker {url} "
                   "--model ... --name NAME")
        return RemoteRun(url, local, spec.remote.claim_ttl_s, spec.remote.patience_s)

    async def grade(plan) -> list[str]:
        """Every candidate of the problems graded without a model (answers, programs), so that the
        report can check the selection against them; of proofs, the selected solutions alone. Under
        the run's lock, as `solve` works: an experiment killed while it wrote a grade left that ref's
        lock file, which no writer would take again (`clear_stale_locks` removes what the dead left)."""
        with run_lock(plan.config.run):
            await anyio.to_thread.run_sync(clear_stale_locks, plan.config.run)
            return await _grade_run(plan)

    async def _grade_run(plan) -> list[str]:
        memory = Memory(plan.config.run)
        problems = [p for p in spec.problem_set.problems if p.id in memory.problems()]
        proofs = [p for p in problems if p.kind == "proof"]
        _, errors = await grade_all(memory, [p for p in problems if p not in proofs], judge, 3, False, True, 900.0)
        _, more = await grade_all(memory, proofs, judge, 3, False, False, 900.0)
        return [message for message, _ in [*errors, *more]]

    runner = Runner(spec, start, grade, _say, Control(), parallel)
    return runner


def _say(line: str) -> None:
    typer.echo(line)
    sys.stdout.flush()


def _plain(runner) -> int:
    """All the runs on one event loop, with Ctrl-C handled as `solve` does."""
    from gitswarm.cli.running import with_signals

    outcome = with_signals(runner.control, runner.run)
    if "result" in outcome:
        outcome["statuses"] = outcome.pop("result")
    return _ended(runner, outcome)


def _dashboards(runner) -> int:
    """Each missing run in turn in the dashboard, which closes when its run ends; the progress
    lines are printed between dashboards."""
    import anyio

    said: list[str] = []
    runner.say = said.append
    todo = runner.prepare()
    anyio.run(runner.grade_earlier, todo)
    outcome: dict = {"statuses": None}
    while todo:
        plan = todo.pop(0)
        _flush(said)
        app = dashboard(runner, plan)
        app.run()
        if app.error is not None or app.result is None or runner.control.stop.is_set():
            outcome = {"error": app.error} if app.error is not None else {}
            break
        todo += runner.after(plan)
    if "statuses" in outcome:
        outcome["statuses"] = runner.statuses()
    _flush(said)
    return _ended(runner, outcome)


def dashboard(runner, plan):
    """The dashboard of one run of the experiment, running it (and grading it) as its engine;
    it closes when the run ends."""
    from gitswarm.tui.app import Dashboard

    return Dashboard(plan.config.run, engine=lambda listener: runner.run_one(plan, [listener]),
                     control=runner.control, exit_when_done=True, max_usd=plan.config.max_usd)


def _flush(said: list[str]) -> None:
    for line in said:
        _say(line)
    said.clear()


def _ended(runner, outcome: dict) -> int:
    """The exit code, and what to do next."""
    from gitswarm.experiment.runner import BROKEN

    if "error" in outcome:
        with user_errors():
            raise outcome["error"]
    statuses = outcome.get("statuses")
    if statuses is None or not all(s.finished for s in statuses.values()):
        typer.echo("gitswarm: the experiment stopped before every run finished; run the same command to resume",
                   err=True)
        return int(Exit.INTERRUPTED)
    spec = runner.spec
    typer.echo(f"\nEvery run finished. Compare the arms: gitswarm experiment {spec.path} "
               f"{'' if spec.folder == Path('experiments') / spec.name else f'--out {spec.folder} '}--report")
    return int(Exit.FAILED) if any(s.reason in BROKEN for s in statuses.values()) else int(Exit.OK)


def _report(spec, fmt: Format, output: Path | None) -> None:
    from gitswarm.experiment import render
    from gitswarm.experiment.report import build

    if not (spec.folder / "runs").is_dir():
        raise fail(f"no runs in {spec.folder} yet: run `gitswarm experiment {spec.path}` first")
    with user_errors():
        data = build(spec)
    text = {Format.json: render.to_json, Format.md: render.to_markdown, Format.html: render.to_html}[fmt](data)
    if output is None:
        typer.echo(text, nl=False)
        return
    with user_errors():
        output.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {output}")
