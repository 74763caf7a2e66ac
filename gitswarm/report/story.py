"""A problem's story in the report: every candidate with its reviews and verdicts, the
rejected ones included, and the revision chains (Markdown and HTML)."""

from __future__ import annotations

import html

from gitswarm.report.collect import ProblemReport, grade_cell

REVIEW_HEADERS = ["episode", "worker", "verdict", "counted", "review"]
CHAINS_SHOWN = 20


def short(problem: str, path: str) -> str:
    """A path inside the problem's folder, without `problems/<id>/`."""
    return path.removeprefix(f"problems/{problem}/")


def headline(problem: ProblemReport, c: dict) -> str:
    """`attempts/x.md: rejected`, the candidate's title."""
    return f"{short(problem.id, c['path'])}: {c['outcome']}"


def facts(problem: ProblemReport, c: dict) -> str:
    """Who wrote a candidate, what it revises and answers, its nominations, verification and grade."""
    said = [f"Written by {c['worker'] or '?'} in episode {c['episode'] or '?'} (commit {c['commit'][:12]})"]
    revises = ", ".join(short(problem.id, p) for p in c["revises"])
    answers = ", ".join(f"the {a['verdict'] or 'unmarked'} review {a['episode'] or '?'} of {short(problem.id, a['of'])}"
                        for a in c["answers"])
    if revises or answers:
        said.append(", ".join(filter(None, [f"revises {revises}" if revises else "",
                                           f"answering {answers}" if answers else ""])))
    said.append(f"{c['nominations']} nomination(s), {'verified' if c['verified'] else 'not verified'}, "
                f"grade {grade_cell(c['grade'], c['grade_scripted'])}")
    return "; ".join(said) + "."


def review_rows(problem: ProblemReport, c: dict) -> list[list[str]]:
    return [[r["episode"], r["worker"] + (" (a person)" if r.get("person") else ""), r["verdict"],
             "yes" if r["counted"] else "no", r["path"] or r["commit"][:12]] for r in c["reviews"]]


def _bold_verdicts(row: list[str]) -> list[str]:
    """Markdown: a critical verdict stands out."""
    at = REVIEW_HEADERS.index("verdict")
    return [f"**{cell}**" if i == at and cell == "critical" else cell for i, cell in enumerate(row)]


def chains(problem: ProblemReport) -> list[list[str]]:
    """Each revision chain, from a candidate no other revises to one nothing revises further:
    every step as `path (outcome)`, with the verdicts of the reviews it answers."""
    by_path = {c["path"]: c for c in problem.story}
    after: dict[str, list[str]] = {}
    for c in problem.story:
        for older in c["revises"]:
            after.setdefault(older, []).append(c["path"])
    found: list[list[str]] = []
    roots = [p for p in after if not by_path.get(p, {}).get("revises")]
    todo = [[p] for p in roots]
    while todo and len(found) < CHAINS_SHOWN:
        chain = todo.pop(0)
        nxt = [p for p in after.get(chain[-1], []) if p not in chain]
        if nxt:
            todo += [[*chain, p] for p in nxt]
        else:
            found.append(chain)
    return [[_step(problem, by_path, p) for p in chain] for chain in found]


def _step(problem: ProblemReport, by_path: dict, path: str) -> str:
    c = by_path.get(path)
    if c is None:
        return short(problem.id, path)
    verdicts = ", ".join(f"{r['verdict']} {r['episode']}" for r in c["reviews"]) or "no review"
    return f"{short(problem.id, path)} ({c['outcome']}; reviews: {verdicts})"


def title(problem: ProblemReport) -> str:
    """The section's title: the candidate the problem stands on, then every other one."""
    if problem.trail_of is None:
        return f"{problem.id}: review trail of every candidate"
    which = "selected" if problem.selected else "leading"
    return (f"{problem.id}: review trail of the {which} candidate {problem.trail_of} ({problem.verification}) "
            "and of every other candidate, with the revisions")


def _intro(problem: ProblemReport) -> str:
    rejected = sum(c["outcome"] == "rejected" for c in problem.story)
    graded = (f"grade of the one it stands on: {grade_cell(problem.grade, problem.grade_scripted)} "
              f"(grader {problem.graded_by}" + (f"; {problem.statuses}" if problem.statuses else "") + ")"
              if problem.graded_by != "-" else "not graded (gitswarm grade RUN grades it)")
    return f"{len(problem.story)} candidate(s), {rejected} rejected by a critical review; {graded}."


def to_markdown(problem: ProblemReport) -> list[str]:
    """The problem's story as Markdown lines; nothing for a problem without a candidate."""
    if not problem.story:
        return []
    lines = [f"## {title(problem)}", "", _intro(problem), ""]
    for chain in chains(problem):
        lines += ["Revision chain: " + " → ".join(chain), ""]
    for c in problem.story:
        lines += [f"### {headline(problem, c)}", "", facts(problem, c), ""]
        rows = review_rows(problem, c)
        if rows:
            lines += ["| " + " | ".join(REVIEW_HEADERS) + " |", "|" + "---|" * len(REVIEW_HEADERS)]
            lines += ["| " + " | ".join(_bold_verdicts(row)) + " |" for row in rows] + [""]
        else:
            lines += ["No review.", ""]
    return lines


def to_html(problem: ProblemReport) -> str:
    """The problem's story as HTML; "" for a problem without a candidate."""
    if not problem.story:
        return ""
    esc = html.escape
    parts = [f"<h2>{esc(title(problem))}</h2><p>{esc(_intro(problem))}</p>"]
    parts += [f"<p class='chain'>Revision chain: {esc(' → '.join(chain))}</p>" for chain in chains(problem)]
    head = "".join(f"<th>{esc(h)}</th>" for h in REVIEW_HEADERS)
    for c in problem.story:
        rows = "".join("<tr>" + "".join(f"<td{_cls(i, cell)}>{esc(cell)}</td>" for i, cell in enumerate(row))
                       + "</tr>" for row in review_rows(problem, c))
        table = f"<table><tr>{head}</tr>{rows}</table>" if rows else "<p>No review.</p>"
        parts.append(f"<h3 class='{esc(c['outcome'])}'>{esc(headline(problem, c))}</h3>"
                     f"<p>{esc(facts(problem, c))}</p>{table}")
    return "".join(parts)


def _cls(column: int, cell: str) -> str:
    """A verdict's cell is coloured by its verdict."""
    return f" class='verdict-{html.escape(cell)}'" if column == REVIEW_HEADERS.index("verdict") else ""
