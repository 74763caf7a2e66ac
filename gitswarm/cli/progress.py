"""Plain progress: one line per event (or one JSON line with --json), for pipes and logs."""

from __future__ import annotations

import sys

import typer

from gitswarm.core import event_types as ev
from gitswarm.core.events import Event, to_line


def bar(done: int, total: int, width: int = 20) -> str:
    """The budget as a text progress bar: `[#####...............]  5/20`."""
    filled = min(width, round(width * done / total)) if total else 0
    return f"[{'#' * filled}{'.' * (width - filled)}] {done:>{len(str(total))}}/{total}"


def printer(as_json: bool = False):
    """A listener printing events to stdout, with the budget as a bar on each charged one."""
    budget = {"total": 0}

    def show(event: Event) -> None:
        if isinstance(event, ev.RunStarted):
            budget["total"] = event.budget
        if as_json:
            typer.echo(to_line(event))
            return
        said = line(event, budget["total"])
        if said is not None:
            typer.echo(said)
            sys.stdout.flush()
    return show


def line(e: Event, budget: int) -> str | None:
    """The progress line of an event (None: it prints none); `budget` for the bar of a charged one."""
    match e:
        case ev.RunStarted() if e.episodes:  # a resume: what it starts from
            # Episodes a graceful stop cut short were recorded as such; only those a crash or kill left
            # unfinished are run again, so only they are counted here.
            again = (f", {e.interrupted} left unfinished by a crash or kill and run again where their problem is "
                     "open" if e.interrupted else "")
            return (f"resuming run {e.run}: {e.charged} of {e.budget} episodes spent ({e.episodes} in all, at most "
                    f"{e.max_episodes}){again}; {e.workers} workers")
        case ev.RunStarted():
            return (f"run {e.run}: {e.workers} workers, budget {e.budget} episodes ({e.charged} already spent), "
                    f"at most {e.max_episodes} episodes in all ({e.episodes} so far)")
        case ev.EpisodeStarted():
            return f"{e.episode} {e.worker} starts on {e.problem}"
        case ev.Committed() if e.verdict:  # a review: its verdict, and the candidate's path in its problem folder
            return f"{bar(e.charged, budget)} {e.episode} {e.worker} reviewed {e.reviews or 'a candidate'} on " \
                   f"{e.problem}: {e.verdict}"
        case ev.Committed():
            return f"{bar(e.charged, budget)} {e.episode} {e.worker} committed to {e.problem} ({(e.commit or '')[:10]})"
        case ev.Nominated():
            return f"{bar(e.charged, budget)} {e.episode} {e.worker} nominated a solution of {e.problem}"
        case ev.Abstained():
            return f"{e.episode} {e.worker} abstained on {e.problem}: {e.note}"
        case ev.Failed():
            return f"{e.episode} {e.worker} failed on {e.problem} ({e.failure or '?'}): {e.note}"
        case ev.Stopped():
            return f"{e.episode} {e.worker} stopped on {e.problem}: {e.note}"
        case ev.WindingDown() | ev.EpisodesCut():
            return e.detail
        case ev.Retry():
            return f"{e.episode} {e.worker}: {e.what} ({ordinal(e.attempt or 1)} time); retrying in {e.delay} s"
        case ev.Merged():
            return f"merged {len(e.episodes)} branch(es) into main ({e.commit[:10]})"
        case ev.ConflictResolved():
            return f"merger composed {e.path} ({e.episode})"
        case ev.Summarised():
            return f"merger rewrote the summary of {e.problem}"
        case ev.MergerFailed():
            return f"merger model call failed: {e.error}"
        case ev.BudgetShort():
            need = f"{e.verify} counted reviews" if e.verify else "the nominations that settle it"
            return (f"note: {e.left} charged episodes left cannot select a verified solution of every one of the "
                    f"{e.problems} open problems: each needs {e.per_problem} (an attempt and {need}); give --budget "
                    f"{e.suggested} or more, solve fewer problems (--problem), or a smaller --verify")
        case ev.Settled():
            return (f"{e.problem} settled: its solution is chosen (written when the run stops); no more episodes "
                    "go there")
        case ev.Selected():
            mark = ", rejected by reviews" if e.rejected else ", unverified" if e.verified is False else ""
            return f"{e.problem}: " + (f"selected {e.path} ({e.nominations} nominations{mark})" if e.path
                                       else "no candidate")
        case ev.SetAside():
            return f"{e.problem} set aside: its last {e.episodes} episodes made no progress, {e.detail}"
        case ev.RunStopped() if _failed(e.reason):  # why follows once, last, on stderr (`running.run_swarm`)
            return f"stopped ({e.reason}): {e.episodes} episodes, {e.charged} charged, {e.tokens} tokens; why follows"
        case ev.RunStopped():
            return f"stopped ({e.reason}): {e.detail}; {e.episodes} episodes, {e.charged} charged, {e.tokens} tokens"
    return None


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _failed(reason: object) -> bool:
    """The stop reason is one of a failed run (exit 1)."""
    from gitswarm.cli.common import STOP_EXIT, Exit
    from gitswarm.core.stops import StopReason

    return isinstance(reason, str) and reason in set(StopReason) and STOP_EXIT[StopReason(reason)] == Exit.FAILED
