"""`gitswarm status RUN`: where each problem stands, as the read model (`gitswarm.readmodel`) has it."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from gitswarm.cli.common import run_folder, user_errors


def status(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/imo, or the git remote URL of a run "
                                       "there (read from a temporary copy).", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object, for scripts.")] = False,
) -> None:
    """Show each problem's state (open, in progress, candidate, nominated, set aside, settled,
    selected), whether the candidate it stands on is verified, its grade and the run's totals.

    Reads main's commits as the engine's selection does (so it shows the leader selection
    would write), by the index of them kept beside the run and the commits since, main's tree
    and the ledger: 0.5 to 0.7 s on a run of 100,000 commits.
    For a run on a git remote, give the coordinator's folder or the remote's URL: a worker's
    folder holds only what that worker ran.
    """
    from gitswarm.memory.repo import Memory
    from gitswarm.readmodel.read import read_run
    from gitswarm.remote.layout import RUN_LEDGER
    from gitswarm.report.lines import rule_line, unconfined_line
    from gitswarm.report.settings import read_settings

    with user_errors(), run_folder(run) as folder, collector_paused():
        memory = Memory(folder)
        state, worker = read_run(memory), memory.snapshot().ref(RUN_LEDGER) is not None
        settings = read_settings(memory, folder)
    if settings.unconfined:
        typer.echo(f"gitswarm: {unconfined_line(settings)}", err=True)
    if worker:
        typer.echo(f"gitswarm: {run} is a worker's folder: the episodes and totals below are this worker's "
                   "own, and main is as it last fetched it. The run's status: `gitswarm status URL` with the "
                   "run's remote, or on the coordinator's folder.", err=True)
    if as_json:
        typer.echo(json.dumps(state.as_dict(), indent=2))
        return
    for line in table(state, rule_line(settings)) + worker_table(state.workers):
        typer.echo(line)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off while the run is read: the index of main is a million objects,
    none of them garbage, that each collection would walk again (a tenth of a status)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def worker_table(workers) -> list[str]:
    """A run on a git remote: one line per worker process (its state and claims held, its
    episodes by outcome, its last push, its tokens)."""
    from gitswarm.readmodel.workers import HEADERS

    if not workers:
        return []
    line = "{:20} {:8} {:>4} {:>8}  {:19} {:>9}  {}"
    return [f"\n{line.format(*(h.upper() for h in HEADERS))}"] + [line.format(*w.cells()) for w in workers]


def table(state, rule: str) -> list[str]:
    """The text form: the totals, the usage parts, how the run decides (`rule`), then one line
    per problem."""
    from gitswarm.report.lines import failed_line, spent_line, usage_line

    t = state.totals
    lines = [f"run {t.run}: {t.charged} charged episodes ({t.episodes} in all), {t.tokens} tokens, "
             + spent_line(t.known_cost_usd, t.cost_known)
             + (f", {t.pending_branches} branch(es) not yet merged" if t.pending_branches else ""),
             f"  {usage_line(t.parts())}",
             f"  {failed_line(t.failed)}", f"  {rule}"]
    # Columns as wide as their longest value, so SELECTED lines up ("1.00 (10/10 tests)" is 18 wide).
    ids = max([28, *(len(p.id) for p in state.problems)])
    verified = max([12, *(len(p.verification) for p in state.problems)])
    grades = max([16, *(len(p.grade_text) for p in state.problems)])
    lines.append(f"\n{'PROBLEM':{ids}} {'STATE':11} {'NOTES':>5} {'LEMMAS':>6} {'ATTEMPTS':>8} {'REVIEWS':>7} "
                 f"{'NOMINATIONS':>11} {'VERIFIED':>{verified}} {'GRADE':>{grades}}  SELECTED")
    for p in state.problems:
        c = p.counts
        lines.append(f"{p.id:{ids}} {p.state:11} {c.notes:5} {c.lemmas:6} {c.candidates:8} {c.reviews:7} "
                     f"{p.nomination_total:11} {p.verification:>{verified}} {p.grade_text:>{grades}}  "
                     f"{p.selected_path or '-'}")
    return lines
