"""The report as Markdown, JSON or self-contained HTML."""

from __future__ import annotations

import html
import json

from gitswarm.readmodel.workers import HEADERS as WORKER_HEADERS
from gitswarm.readmodel.workers import WorkerState
from gitswarm.report.collect import ProblemReport, RunReport
from gitswarm.report.graph import Graph

DEFINITIONS = (
    "**Built on**: a contribution (a note, lemma, attempt, review or code commit of a problem) counts as "
    "built on when another contribution of the same problem cites it (`Gitswarm-Informed-By`) or "
    "inherited it (it is an ancestor, by parent links, of the other's start commit). "
    "**In ancestry**: a contribution counts when it is reachable from the selected candidate by "
    "parent links and citations, the candidate included. Each share is over all contributions "
    "of the problem (main and unmerged branches)."
)


def pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def usd(cost: float | None) -> str:
    return "unknown" if cost is None else f"{cost:.4f}"


def usage_line(parts: dict[str, int]) -> str:
    """The parts of a run's usage in one line (`Totals.parts()`)."""
    return (f"input {parts['tokens_in']:,} tokens (cache read {parts['cache_read']:,}, cache write "
            f"{parts['cache_write']:,}), output {parts['tokens_out']:,} (reasoning {parts['reasoning']:,}); "
            f"{parts['calls']:,} calls, {parts['failed_calls']:,} failed"
            + (f"; {parts['estimated_tokens']:,} of the tokens counted by gitswarm (the server sent no count)"
               if parts.get("estimated_tokens") else ""))


def failed_line(failed: dict[str, int]) -> str:
    """Failed episodes by class, in one phrase: whose failure each was."""
    return ("failed episodes: " + ", ".join(f"{n:,} {kind}" for kind, n in failed.items())
            + " (provider: no whole reply; model: its replies went nowhere; engine: an error inside gitswarm)")


def to_json(report: RunReport) -> str:
    return json.dumps(report.to_dict(), indent=2) + "\n"


def _rows(report: RunReport) -> list[list[str]]:
    return [[p.id, p.selected_path or "-", str(p.nominations.get(p.selected or "", 0)),
             str(sum(p.nominations.values())), p.verification, p.grade, str(p.episodes), str(p.tokens), usd(p.cost_usd),
             f"{p.seconds:.1f}", str(p.contributions), f"{p.built_on} ({pct(p.built_on_share)})",
             f"{p.in_ancestry} ({pct(p.ancestry_share)})"] for p in report.problems]


HEADERS = ["problem", "selected solution", "its nominations", "all nominations", "verification", "grade",
           "episodes",
           "tokens", "USD", "worker s", "contributions", "built on", "in ancestry"]


def _summary(report: RunReport) -> str:
    return (f"{report.episodes} episodes ({report.charged} charged), {report.tokens:,} tokens, "
            f"USD {usd(report.cost_usd)}, {report.wall_seconds:.1f} s wall time. "
            f"All calls, the merger's too: {usage_line(report.usage)}. {failed_line(report.failed)}. "
            f"{report.contributions} contributions: {pct(report.built_on_share)} built on by later work, "
            f"{pct(report.ancestry_share)} in the selected solutions' ancestry.")


def to_markdown(report: RunReport) -> str:
    lines = [f"# gitswarm report: {report.run}", "", _summary(report), "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    lines += ["", DEFINITIONS, ""]
    if report.workers:
        lines += ["## Worker processes", "", "| " + " | ".join(WORKER_HEADERS) + " |",
                  "|" + "---|" * len(WORKER_HEADERS)]
        lines += ["| " + " | ".join(row) + " |" for row in _worker_rows(report)] + [""]
    for p in report.problems:
        lines += _trail_markdown(p)
    return "\n".join(lines)


def _worker_rows(report: RunReport) -> list[tuple[str, ...]]:
    return [WorkerState.from_dict(w).cells() for w in report.workers]


TRAIL_HEADERS = ["episode", "worker", "verdict", "counted", "review"]


def _trail_rows(problem: ProblemReport) -> list[list[str]]:
    return [[r["episode"], r["worker"], r["verdict"], "yes" if r["counted"] else "no (its author)", r["path"]]
            for r in problem.trail]


def _trail_title(problem: ProblemReport) -> str:
    which = "selected" if problem.selected else "leading"
    return f"{problem.id}: review trail of the {which} candidate {problem.trail_of} ({problem.verification})"


def _trail_markdown(problem: ProblemReport) -> list[str]:
    """The reviews of the candidate a problem stands on, as a table; nothing without one."""
    if problem.trail_of is None:
        return []
    if not problem.trail:
        return [f"## {_trail_title(problem)}", "", "No review.", ""]
    return [f"## {_trail_title(problem)}", "", "| " + " | ".join(TRAIL_HEADERS) + " |",
            "|" + "---|" * len(TRAIL_HEADERS), *("| " + " | ".join(row) + " |" for row in _trail_rows(problem)), ""]


def to_html(report: RunReport, graph: Graph) -> str:
    """One self-contained page: tables and an inline SVG of each problem's contribution graph."""
    from gitswarm.report.draw import svg

    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in _rows(report))
    drawings = "".join(_drawing(p, graph, svg) for p in report.problems)
    if report.workers:
        top = "".join(f"<th>{esc(h)}</th>" for h in WORKER_HEADERS)
        cells = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in _worker_rows(report))
        drawings = f"<h2>Worker processes</h2><table><tr>{top}</tr>{cells}</table>{drawings}"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>gitswarm report {esc(report.run)}</title>"
            f"<style>{CSS}</style></head><body><h1>gitswarm report: {esc(report.run)}</h1>"
            f"<p>{esc(_summary(report))}</p><table><tr>{head}</tr>{body}</table>"
            f"<p class='defs'>{esc(DEFINITIONS.replace('**', '').replace('`', ''))}</p>{drawings}</body></html>\n")


def _trail_html(problem: ProblemReport) -> str:
    esc = html.escape
    if problem.trail_of is None:
        return ""
    head = "".join(f"<th>{esc(h)}</th>" for h in TRAIL_HEADERS)
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in _trail_rows(problem))
    table = f"<table><tr>{head}</tr>{rows}</table>" if rows else "<p>No review.</p>"
    return f"<h2>{esc(_trail_title(problem))}</h2>{table}"


def _drawing(problem: ProblemReport, graph: Graph, svg) -> str:
    return (f"{_trail_html(problem)}<h2>{html.escape(problem.id)}: contribution graph</h2>"
            f"<div class='graph'>{svg(graph, problem.id, problem.selected)}</div>"
            "<p class='defs'>Colour: kind. Black outline: in the selected solution's ancestry. "
            "Solid arrow: inherited (the later one started from a memory holding it); dashed: cited.</p>")


CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
table { border-collapse: collapse; font-size: 0.9em; } td, th { border: 1px solid #bbb; padding: 0.2em 0.5em; }
th { background: #eef; } .defs { font-size: 0.85em; color: #444; max-width: 60em; }
.graph svg { max-width: 100%; height: auto; }
"""
