"""The report as Markdown, JSON or self-contained HTML."""

from __future__ import annotations

import html
import json

from gitswarm.readmodel.workers import HEADERS as WORKER_HEADERS
from gitswarm.readmodel.workers import WorkerState
from gitswarm.report import story
from gitswarm.report.collect import ProblemReport, RunReport, grade_cell
from gitswarm.report.graph import Graph
from gitswarm.report.inherited import Inherited
from gitswarm.report.lines import failed_line, review_mode, unconfined_line, usage_line
from gitswarm.report.selector import SelectorQuality
from gitswarm.report.settings import RunSettings

DEFINITIONS = (
    "**Citation rate**: the share of contributions (note, lemma, attempt, review or code commits of a "
    "problem) that cite another contribution of the same problem (their commit's `informed_by`). "
    "**Built on**: a contribution counts as built on when another contribution of the same problem "
    "cites it. "
    "**In ancestry**: a contribution counts when it is the selected candidate, is cited by it "
    "(repeatedly), or is a pass review of it. Each share is over all contributions "
    "of the problem (main and unmerged branches). "
    "A problem's **tokens**, USD and worker seconds are its own episodes'; the merger's calls "
    "(summaries, conflict resolutions) count in the run's total only."
)
NO_DRAWINGS = ("The contribution graphs are left out: drawing them needs networkx and matplotlib, "
               "the `report` extra (pip install 'gitswarm[report]').")


def pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def usd(cost: float | None) -> str:
    return "unknown" if cost is None else f"{cost:.4f}"


def context_line(context: dict) -> str:
    """What the episodes sent their models, in one sentence (`collect.context_of`)."""
    if not context.get("calls"):
        return ""
    share = context["cache_share"]
    return (f"Context: {context['input_per_call']:,} input tokens per call on average, the largest "
            f"{context['largest_input']:,} ({context['largest_at']}); "
            + (f"{share:.0%} read from the provider's cache; " if share is not None else "")
            + f"{context['compactions']} compaction(s) in {context['episodes_compacted']} episode(s), "
            f"{context['stub_batches']} batch(es) of old tool outputs stubbed.")


def to_json(report: RunReport) -> str:
    return json.dumps(report.to_dict(), indent=2) + "\n"


def _rows(report: RunReport) -> list[list[str]]:
    return [[p.id, p.selected_path or "-", str(p.nominations.get(p.selected or "", 0)),
             str(sum(p.nominations.values())), p.verification, grade_cell(p.grade, p.grade_scripted),
             str(p.episodes), str(p.tokens), usd(p.cost_usd),
             f"{p.seconds:.1f}", str(p.contributions), f"{p.built_on} ({pct(p.built_on_share)})",
             f"{p.in_ancestry} ({pct(p.ancestry_share)})"] for p in report.problems]


HEADERS = ["problem", "selected solution", "its nominations", "all nominations", "verification", "grade",
           "episodes",
           "tokens", "USD", "worker s", "contributions", "built on", "in ancestry"]


def settings_line(settings: RunSettings, processes: list[str]) -> str:
    """The model, budget, workers (and, on a remote, the worker processes) and verification rule."""
    unknown = "not recorded"
    budget = f"{settings.budget} episodes" if settings.budget is not None else unknown
    cap = f" (at most {settings.max_episodes} of any outcome)" if settings.max_episodes is not None else ""
    workers = f"{settings.workers}" if settings.workers is not None else unknown
    if processes:
        workers = (f"{workers} in the coordinator's process, and {len(processes)} worker process(es): "
                   + ", ".join(processes))
    row = " in a row" if settings.in_row else ""
    rule = (f"a candidate is verified by {settings.verify} `pass` review(s){row} from workers other than its "
            f"author and no critical one (verify K = {settings.verify})" if settings.verify
            else "no review needed, plain plurality (verify K = 0)")
    resumed = f"; started {settings.starts} times (resumed)" if settings.starts > 1 else ""
    reviews = ({"assigned": "reviews assigned to one candidate each", "blind": "blind reviews (the statement "
                "and the candidate alone)"}.get(review_mode(settings), "")
               + (f" on {settings.reviewer}" if settings.reviewer else ""))
    settle = ("the first verified candidate settles a problem (best-of-n: independent attempts, no nominations)"
              if settings.isolation == "best-of-n" else
              f"{settings.settle_nominations} nominations of one candidate settle a problem")
    return (f"Model {settings.model or unknown}; budget {budget}{cap}; workers {workers}{resumed}. "
            f"Verification: {rule}{f'; {reviews.strip()}' if reviews.strip() else ''}; {settle}."
            + (f" {unconfined_line(settings)}" if settings.unconfined else ""))


def totals_line(report: RunReport) -> str:
    """The run's totals, the ledger's as `status` gives them, and what the problems' figures leave out."""
    rest = report.tokens - report.problem_tokens - report.merger_tokens
    parts = [f"the problems' episodes {report.problem_tokens:,}", f"the merger {report.merger_tokens:,}"]
    parts += [f"not charged to a listed problem {rest:,}"] if rest else []
    return (f"{report.episodes} episodes ({report.charged} charged), {report.tokens:,} tokens (the ledger's total, "
            f"as `gitswarm status` gives it: {', '.join(parts)}), USD {usd(report.cost_usd)}, "
            f"{report.wall_seconds:.1f} s wall time.")


def roles_line(roles: list[dict]) -> str:
    """What each role spent on its model, in one sentence."""
    shown = [f"{r['role']} on {r['model']}: " + (f"{r['episodes']} episodes, " if r["role"] != "merger" else "")
             + f"{r['calls']} calls, {r['tokens']:,} tokens, USD {usd(r['cost_usd'])}" for r in roles]
    return f"By role: {'; '.join(shown)}." if shown else ""


def _summary(report: RunReport) -> str:
    processes = [w["name"] for w in report.workers]
    return (f"{settings_line(RunSettings(**report.settings), processes)} {totals_line(report)} "
            + (f"{roles_line(report.roles)} " if report.roles else "") +
            f"All calls, the merger's too: {usage_line(report.usage)}. {failed_line(report.failed)}. "
            + (f"{context_line(report.context)} " if context_line(report.context) else "") +
            f"{report.contributions} contributions: {pct(report.citation_rate)} cite earlier work, "
            f"{pct(report.built_on_share)} built on by later work, "
            f"{pct(report.ancestry_share)} in the selected solutions' ancestry.")


def to_markdown(report: RunReport) -> str:
    lines = [f"# gitswarm report: {report.run}", "", _summary(report), "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    lines += ["", DEFINITIONS, ""]
    if report.selector:
        lines += [SelectorQuality(**report.selector).sentence(), ""]
    if report.inherited:
        lines += [Inherited(**report.inherited).sentence(), ""]
    if report.workers:
        lines += ["## Worker processes", "", "| " + " | ".join(WORKER_HEADERS) + " |",
                  "|" + "---|" * len(WORKER_HEADERS)]
        lines += ["| " + " | ".join(row) + " |" for row in _worker_rows(report)] + [""]
    for p in report.problems:
        lines += story.to_markdown(p)
    return "\n".join(lines)


def _worker_rows(report: RunReport) -> list[tuple[str, ...]]:
    return [WorkerState.from_dict(w).cells() for w in report.workers]


def to_html(report: RunReport, graph: Graph, drawings: bool = True) -> str:
    """One self-contained page: tables, each problem's story and, with `drawings` (the report
    extra), an inline SVG of its contribution graph."""
    from gitswarm.report.draw import svg

    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in _rows(report))
    sections = "" if drawings else f"<p class='defs'>{esc(NO_DRAWINGS)}</p>"
    if report.selector:
        sections = f"<p>{esc(_plain(SelectorQuality(**report.selector).sentence()))}</p>" + sections
    if report.inherited:
        sections = f"<p>{esc(Inherited(**report.inherited).sentence())}</p>" + sections
    if report.workers:
        top = "".join(f"<th>{esc(h)}</th>" for h in WORKER_HEADERS)
        cells = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in _worker_rows(report))
        sections += f"<h2>Worker processes</h2><table><tr>{top}</tr>{cells}</table>"
    sections += "".join(_drawing(p, graph, svg if drawings else None) for p in report.problems)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>gitswarm report {esc(report.run)}</title>"
            f"<style>{CSS}</style></head><body><h1>gitswarm report: {esc(report.run)}</h1>"
            f"<p>{esc(_plain(_summary(report)))}</p><table><tr>{head}</tr>{body}</table>"
            f"<p class='defs'>{esc(_plain(DEFINITIONS))}</p>{sections}</body></html>\n")


def _plain(markdown: str) -> str:
    return markdown.replace("**", "").replace("`", "")


def _drawing(problem: ProblemReport, graph: Graph, svg) -> str:
    if svg is None:
        return story.to_html(problem)
    return (f"{story.to_html(problem)}<h2>{html.escape(problem.id)}: contribution graph</h2>"
            f"<div class='graph'>{svg(graph, problem.id, problem.selected)}</div>"
            "<p class='defs'>Colour: kind. Black outline: in the selected solution's ancestry. "
            "Solid arrow: inherited (the later one started from a memory holding it); dashed: cited.</p>")


CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
table { border-collapse: collapse; font-size: 0.9em; display: block; max-width: 100%; overflow-x: auto; }
td, th { border: 1px solid #bbb; padding: 0.2em 0.5em; overflow-wrap: anywhere; }
th { background: #eef; } .defs { font-size: 0.85em; color: #444; max-width: 60em; }
.graph svg { max-width: 100%; height: auto; }
.verdict-critical, h3.rejected { color: #b00020; font-weight: bold; } .verdict-pass { color: #1b5e20; }
.verdict-gaps { color: #8a6d00; } .chain { font-family: ui-monospace, monospace; font-size: 0.9em; }
"""
