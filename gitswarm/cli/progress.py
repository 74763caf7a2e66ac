"""Plain progress: one line per event (or one JSON line with --json), for pipes and logs."""

from __future__ import annotations

import sys

import typer

from gitswarm.core.events import Event

SHOWN = {
    "run_started": ("run {run}: {workers} workers, budget {budget} episodes ({charged} already spent), "
                    "at most {max_episodes} episodes in all ({episodes} so far)"),
    "episode_started": "{episode} {worker} starts on {problem}",
    "committed": "{bar} {episode} {worker} committed to {problem} ({commit_short})",
    "nominated": "{bar} {episode} {worker} nominated a solution of {problem}",
    "abstain": "{episode} {worker} abstained on {problem}: {note}",
    "failed": "{episode} {worker} failed on {problem} ({failure}): {note}",
    "stopped": "{episode} {worker} stopped on {problem}: {note}",
    "winding_down": "{detail}",
    "episodes_cut": "{detail}",
    "retry": "{episode} {worker}: {what} ({nth} time); retrying in {delay} s",
    "merged": "merged {count} branch(es) into main ({commit_short})",
    "conflict_resolved": "merger composed {path} ({episode})",
    "summarised": "merger rewrote the summary of {problem}",
    "merger_failed": "merger model call failed: {error}",
    "budget_short": ("note: {left} charged episodes left cannot select a verified solution of every one of the "
                     "{problems} open problems: each needs {per_problem} (an attempt and {need}); give --budget "
                     "{suggested} or more, solve fewer problems (--problem), or a smaller --verify"),
    "settled": "{problem} settled: its solution is chosen (written when the run stops); no more episodes go there",
    "selected": "{problem}: {choice}",
    "set_aside": "{problem} set aside: its last {episodes} episodes made no progress, {detail}",
    "run_stopped": "stopped ({reason}): {detail}; {episodes} episodes, {charged} charged, {tokens} tokens",
}
RESUMING = ("resuming run {run}: {charged} of {budget} episodes spent ({episodes} in all, at most "
            "{max_episodes}), {interrupted} cut off by its last stop and run again where their problem is open; "
            "{workers} workers")
"""`run_started` of a run that has episodes already: what a resume starts from."""
REVIEWED = "{bar} {episode} {worker} reviewed {reviews} on {problem}: {verdict}"
"""A committed review, when its event carries `verdict` (pass, gaps, critical) and `reviews`
(the reviewed candidate's path in its problem folder, e.g. attempts/first-try-e00006.md)."""


def bar(done: int, total: int, width: int = 20) -> str:
    """The budget as a text progress bar: `[#####...............]  5/20`."""
    filled = min(width, round(width * done / total)) if total else 0
    return f"[{'#' * filled}{'.' * (width - filled)}] {done:>{len(str(total))}}/{total}"


def printer(as_json: bool = False):
    """A listener printing events to stdout, with the budget as a bar on each charged one."""
    budget = {"total": 0}

    def show(event: Event) -> None:
        if event.kind == "run_started":
            budget["total"] = _int(event.data.get("budget"))
        if as_json:
            typer.echo(event.to_json())
            return
        template = _template(event)
        if template is None:
            return
        data = {"interrupted": 0, **event.data}
        data["reviews"] = data.get("reviews") or "a candidate"
        data["commit_short"] = str(data.get("commit") or "")[:10]
        data["bar"] = bar(_int(data.get("charged")), budget["total"])
        if event.kind == "merged":
            episodes = data.get("episodes")
            data["count"] = len(episodes) if isinstance(episodes, list) else 0
        if event.kind == "budget_short":
            data["need"] = (f"{data.get('verify')} counted reviews" if data.get("verify")
                            else "the nominations that settle it")
        if event.kind == "retry":
            data["nth"] = ordinal(_int(data.get("attempt")) or 1)
        mark = ", unverified" if data.get("verified") is False else ""
        data["choice"] = (f"selected {data.get('path')} ({data.get('nominations')} nominations{mark})"
                          if data.get("path") else "no candidate")
        typer.echo(template.format_map(_Default(data)))
        sys.stdout.flush()
    return show


def _int(value: object) -> int:
    """A number an event carries (0 when it has none)."""
    return int(value) if isinstance(value, int | float | str) and value else 0


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class _Default(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _template(event: Event) -> str | None:
    """The line an event prints: a review with its verdict, a resumed run as a resume."""
    if event.kind == "committed" and event.data.get("verdict"):
        return REVIEWED
    if event.kind == "run_started" and event.data.get("episodes"):
        return RESUMING
    if event.kind == "run_stopped" and _failed(event.data.get("reason")):
        return STOPPED_FAILING
    return SHOWN.get(event.kind)


STOPPED_FAILING = "stopped ({reason}): {episodes} episodes, {charged} charged, {tokens} tokens; why follows"
"""A run that failed: its reason's paragraph is printed once, last, on stderr (`running.run_swarm`)."""


def _failed(reason: object) -> bool:
    """The stop reason is one of a failed run (exit 1)."""
    from gitswarm.cli.common import STOP_EXIT, Exit
    from gitswarm.core.stops import StopReason

    return isinstance(reason, str) and reason in set(StopReason) and STOP_EXIT[StopReason(reason)] == Exit.FAILED
