"""`gitswarm replay RUN --problem P --candidate C`: run fresh episodes from C's start state
with and without the memory C cited, and compare how often each reaches an accepted solution."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import Effort, Exit, user_errors
from gitswarm.cli.solve import ModelOpt


def replay(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="The run folder, e.g. runs/answers.",
                                        show_default=False)],
    problem: Annotated[str, typer.Option("--problem", "-p", metavar="P", help="The problem C is an attempt of.",
                                         show_default=False)],
    candidate: Annotated[str, typer.Option(
        "--candidate", "-c", metavar="C", help="The attempt (or code) commit on the run's main history, by its id "
                                               "or a prefix of it.", show_default=False)],
    episodes: Annotated[int, typer.Option(
        "--episodes", "-k", min=1, max=500, metavar="K", help="Fresh episodes per arm.")] = 8,
    model: ModelOpt = None,
    api_base: Annotated[str | None, typer.Option(
        help="OpenAI-compatible server URL (vLLM, llama.cpp, ...); default: the provider's own.")] = None,
    max_output_tokens: Annotated[int | None, typer.Option(
        min=1, help="Tokens of one reply at most, thinking included (default: the client's, 16000).")] = None,
    max_steps: Annotated[int | None, typer.Option(min=2, help="Model calls per episode at most (default 12).")] = None,
    reasoning_effort: Annotated[Effort | None, typer.Option(
        help="Turn the workers' reasoning mode on at this effort (default: the model's own).")] = None,
    seed: Annotated[int, typer.Option(
        min=0, help="Episode n of each arm runs with seed SEED + n - 1 (the scheduler's, and the scripted "
                    "solver's draws).")] = 0,
    parallel: Annotated[int, typer.Option(
        "--parallel", "-j", min=1, metavar="N", help="Episodes at once, each still a run of its own.")] = 1,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="The replay's folder (default replays/<run name>-<P>-<C[:10]>).",
        show_default=False)] = None,
    referee_model: Annotated[str | None, typer.Option(
        "--referee-model", envvar="GITSWARM_REFEREE_MODEL", metavar="MODEL",
        help="litellm model string of the referee: needed for proof problems, and judges answers the "
             "symbolic check cannot decide.", show_default=False)] = None,
    problem_set: Annotated[Path | None, typer.Option(
        "--set", metavar="DIR", help="Problem-set folder holding the hidden parts (default: the set the run "
                                     "was made from).", show_default=False)] = None,
    scripted: Annotated[list[str] | None, typer.Option(
        "--scripted", metavar="KEY=VALUE", help="With --model scripted-solver: its chances p, boost or check "
                                                "(repeatable), e.g. --scripted p=0.2.", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object (progress lines go "
                                                         "to stderr).")] = False,
) -> None:
    """Does the memory C cited cause its result? Run K fresh episodes on P from the state C's
    author started from (C's first parent), once with that memory as it was and once with it
    removed, and count how often each arm reaches an accepted solution: an attempt the referee
    grades correct (answer key; hidden tests; a proof needs --referee-model).

    The without-memory arm starts from one commit on top of that state deleting from
    problems/P/ the files the commits C cites wrote (its message says why). Only those files go:
    SUMMARY.md, reviews and nominations that mention them stay, and the state header's counts of
    contributions still count them (and one 'replay').

    Each episode is a run of its own (budget 1, one episode) in <out>/<arm>/episode-NN, made
    from RUN without touching it: main and the run's metadata only, none of its ledger, grades,
    transcripts, ops or branches. A run's later episodes start from what its earlier ones wrote,
    so K runs of one episode are K fresh draws from the same state; episode n of both arms has
    the same seed. Read any of them with git log; run the same command again to run only what is
    missing. The original run's selection rule (verify) applies, as the advice the episodes see
    follows it.

    --model scripted-solver serves the scripted solver (gitswarm experiment's test double, handed
    the answer keys): a simulator that shows the mechanics without an API key, never evidence
    about real models.

    Exit 0 when every episode finished, 1 when one ended by the provider or gitswarm failing, 2 on
    bad input (nothing written), 130 when stopped by Ctrl-C.
    """
    from gitswarm.experiment import replay as plan
    from gitswarm.experiment.replay_arms import default_out, draws

    with user_errors():
        target = plan.check(run, problem, candidate, problem_set)
        solver = _solver_settings(model, scripted)
        judge = _judge(referee_model)
        plan.gradable(target.problem, judge)
        base = _config(target, model, solver, api_base=api_base, max_output_tokens=max_output_tokens,
                       max_steps=max_steps, reasoning_effort=reasoning_effort)
        folder = out or default_out(run, problem, target.candidate)
        settings = plan.Settings(base.model, seed, base.api_base, max_output_tokens, max_steps, reasoning_effort,
                                 solver.model_dump() if solver is not None else None)
        plan.claim_folder(folder, target, settings)
    say = (lambda line: typer.echo(line, err=True)) if as_json else typer.echo
    replayer = _replayer(target, draws(folder, episodes, seed), base, solver, judge, say, parallel)
    results, code = _plain(replayer)
    _print(target, folder, results, solver is not None, as_json)
    raise typer.Exit(code)


def _solver_settings(model: str | None, given: list[str] | None):
    """The scripted solver's chances when `model` names it (None otherwise)."""
    from pydantic import ValidationError

    from gitswarm.demo.solver import SOLVER_MODEL, SolverSettings
    from gitswarm.experiment.replay import ReplayError

    if model != SOLVER_MODEL:
        if given:
            raise ReplayError(f"--scripted sets the scripted solver's chances: it goes with --model {SOLVER_MODEL}")
        return None
    values: dict[str, str] = {}
    for item in given or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ReplayError(f"--scripted {item!r}: give KEY=VALUE, e.g. --scripted p=0.2 (keys: p, boost, check)")
        values[key.strip()] = value.strip()
    try:
        return SolverSettings(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        raise ReplayError(f"--scripted: {problems} (keys: p, boost, check, each from 0 to 1)") from None


def _judge(referee_model: str | None):
    from gitswarm.cli.grade import judge_for
    from gitswarm.engine.settings import config_file, grade_settings, merge_grade

    return judge_for(merge_grade({"referee_model": referee_model}, grade_settings(config_file())))


def _config(target, model: str | None, solver, **given):
    """The draws' settings: the user's model options over the config file's [solve], with what
    a draw is held to (one episode on P, the original run's selection rule)."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.settings import config_file, file_settings, merge
    from gitswarm.experiment.replay import ReplayError
    from gitswarm.experiment.spec import SOLVER_KEY, SOLVER_LITELLM
    from gitswarm.models.credentials import credentials_hint

    from_file = file_settings(config_file())
    selection = {k: v for k, v in target.selection.items()
                 if k in ("verify", "settle_nominations") and isinstance(v, int) and not isinstance(v, bool)}
    verify = selection.get("verify", from_file.get("verify", SolveConfig.model_fields["verify"].default))
    workers = max(1, verify + 1) if isinstance(verify, int) else 1  # else the settings' check says why
    held = {"problem_ids": (target.problem.id,), "budget": 1, "max_episodes": 1, "isolation": "shared",
            "workers": workers, "verify": verify, **selection}
    if solver is not None:
        held |= {"model": SOLVER_LITELLM, "api_key": SOLVER_KEY}
    cfg = merge(target.problem_set, None, {"model": model, **given, **held}, from_file)
    if not cfg.model:
        raise ReplayError("no model: give --model (a litellm model string, or scripted-solver for the simulator), "
                          "or set GITSWARM_MODEL")
    hint = None if solver is not None else credentials_hint(cfg.model, api_base=cfg.api_base, api_key=cfg.api_key)
    if hint:
        raise ReplayError(hint)
    return cfg


def _replayer(target, todo, base, solver, judge, say, parallel: int):
    """The Replayer: each draw through the engine as `solve` runs it, against the scripted solver
    on a fake server of its own when asked for."""
    from functools import partial

    from gitswarm.cli.running import run_engine
    from gitswarm.core.control import Control
    from gitswarm.demo.solver import Solver
    from gitswarm.experiment.replay_draws import Replayer
    from gitswarm.fakeserver import serve

    control = Control()
    answers = {target.problem.id: target.problem.answer} if target.problem.answer else {}

    async def start(draw):
        cfg = base.model_copy(update={"run": draw.path, "seed": draw.seed})
        fake = partial(serve, Solver(answers, solver, seed=draw.seed)) if solver is not None else None
        return await run_engine(cfg, target.problem_set, [], control, fake)

    return Replayer(target, todo, start, judge, say, control, parallel)


def _plain(replayer) -> tuple[list, int]:
    """Every draw on one event loop, with Ctrl-C handled as `solve` does; the results and the exit code."""
    from gitswarm.cli.running import with_signals
    from gitswarm.experiment.runner import BROKEN

    outcome = with_signals(replayer.control, replayer.run)
    if "result" in outcome:
        outcome["results"] = outcome.pop("result")
    if "error" in outcome:
        with user_errors():
            raise outcome["error"]
    results = outcome.get("results")
    if results is None or not all(r.finished for r in results):
        typer.echo("gitswarm: the replay stopped before every episode finished; run the same command to resume",
                   err=True)
        return results or [], int(Exit.INTERRUPTED)
    return results, int(Exit.FAILED) if any(r.reason in BROKEN for r in results) else int(Exit.OK)


def _print(target, folder: Path, results: list, simulated: bool, as_json: bool) -> None:
    from gitswarm.experiment.replay_tally import compare, table, tally

    counted = tally(results)
    comparison = compare(counted, results, target.candidate, simulated)
    if as_json:
        data = {**target.describe(), "out": str(folder), "simulated": simulated,
                "arms": [t.as_dict() for t in counted.values()], "comparison": comparison,
                "draws": [r.as_dict() for r in results]}
        typer.echo(json.dumps(data, indent=2))
        return
    typer.echo(f"\nReplay of {target.candidate[:10]} ({target.problem.id}) from its start state {target.start[:10]}; "
               f"without memory: {', '.join(target.removed)} removed.\n")
    typer.echo(table(counted))
    typer.echo(f"\n{comparison['sentence']}")
    typer.echo(f"\nRead the episodes: git -C {folder}/<arm>/episode-NN log --graph --oneline main")
    sys.stdout.flush()
