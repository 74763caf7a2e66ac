"""`gitswarm show RUN PROBLEM`: a problem's selected solution, one candidate or one review, as text.

A run is a bare repository, so its files are not on disk; this reads them from main's tree (a
candidate no longer on main, from its own commit) and the facts about them from the read model
(`gitswarm.readmodel`), as `status` and the report do.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gitswarm.cli.common import Exit, fail, run_folder, user_errors
from gitswarm.cli.log import unknown

View = tuple[list[str], dict]
"""What a view prints: its text lines, and its JSON form."""


def show(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/demo, or the git remote URL of a run "
                                       "there (read from a temporary copy).", show_default=False)],
    problem: Annotated[str, typer.Argument(help="The problem id, e.g. demo-odd-sum.", show_default=False)],
    candidate: Annotated[str | None, typer.Option(
        help="Show this candidate instead, with its reviews' verdicts: its path (attempts/x.md, code/<slug>, "
             "or the name alone) or its commit id.", metavar="PATH_OR_COMMIT")] = None,
    review: Annotated[str | None, typer.Option(
        help="Show this review instead: its path (reviews/x.md, or the name alone), its commit id or its "
             "episode id.", metavar="PATH_OR_COMMIT")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object, for scripts.")] = False,
) -> None:
    """Print a problem's selected solution: its text (main's SOLUTION.md), whether its reviews
    verified it, and its grade if it was graded.

    \b
    Examples, on the demo's run:
      gitswarm show runs/demo demo-odd-sum
      gitswarm show runs/demo demo-odd-sum --candidate first-try-e00007.md
      gitswarm show runs/demo demo-odd-sum --review review-e00012.md

    The first prints the proof the run selected and the three reviews that passed it; the
    second, the flawed first attempt with its critical review; the third, that review. A
    problem without a selected solution lists its candidates; `gitswarm status RUN` lists the
    problems and `gitswarm log RUN --problem ID` their whole history.
    """
    from gitswarm.memory.repo import Memory
    from gitswarm.readmodel.read import read_run

    if candidate is not None and review is not None:
        raise fail("give --candidate or --review, not both", Exit.BAD_INPUT)
    with user_errors(), run_folder(run) as folder:
        memory = Memory(folder)
        state = read_run(memory)
        found = next((p for p in state.problems if p.id == problem), None)
        if found is None:
            raise unknown(f"{run} has no problem {problem!r}", problem, [p.id for p in state.problems],
                          "its problems")
        if review is not None:
            lines, data = review_view(memory, found, review, run)
        elif candidate is not None:
            lines, data = candidate_view(memory, found, pick_candidate(found, candidate, run))
        else:
            lines, data = solution_view(memory, found, run)
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False) if as_json else "\n".join(lines))


def solution_view(memory, p, run: str) -> View:
    """The selected solution: what selected it, its reviews, its grade, then SOLUTION.md's text.
    Without one, the problem's candidates."""
    head = f"{p.id} ({p.kind}): {p.state}"
    if p.selected is None:
        lines = [f"{head}; no solution is selected yet (the run writes SOLUTION.md when it stops)."]
        lines += ([f"candidates (`gitswarm show {run} {p.id} --candidate PATH` shows one):"]
                  + [f"  {candidate_line(p.id, c)}" for c in p.candidates] if p.candidates else ["no candidates yet."])
        return lines, {"problem": p.id, "kind": p.kind, "state": p.state, "selected": None,
                       "candidates": [c.as_dict() for c in p.candidates]}
    sel, chosen = p.selected, p.standing
    nominations = f", {sel.nominations} nominations" if sel.nominations is not None else ""
    text = body(memory.read_file(f"problems/{p.id}/SOLUTION.md"))
    lines = [head, f"selected {sel.path} (commit {sel.candidate[:10]}{nominations})",
             f"verification: {p.verification}" + (f" ({tally(chosen)}; {rule(p.verify)})" if chosen else ""),
             f"grade: {grade_line(p.grade)}"]
    lines += trail_lines(chosen)
    others = [c for c in p.candidates if c is not chosen]
    if others:
        lines.append("other candidates (`--candidate PATH` shows one): "
                     + ", ".join(f"{short(p.id, c.path)} ({tally(c)})" for c in others))
    lines += ["", f"--- problems/{p.id}/SOLUTION.md ---", text.rstrip("\n")]
    return lines, {"problem": p.id, "kind": p.kind, "state": p.state, "selected": sel.path,
                   "selected_commit": sel.candidate, "verification": p.verification,
                   "grade": p.grade_text if p.grade else None, "candidate": chosen.as_dict() if chosen else None,
                   "text": text, "candidates": [c.as_dict() for c in p.candidates]}


def candidate_view(memory, p, c) -> View:
    """One candidate: who wrote it, its nominations, reviews and grade, then its text."""
    meta = memory.commit(c.commit).meta if c.commit else None
    worker, episode = getattr(meta, "worker", "") or None, getattr(meta, "episode", "") or None
    chosen = p.selected is not None and p.selected.candidate == c.commit
    lines = [f"candidate {c.path} of {p.id}" + (" (the selected solution)" if chosen else ""),
             (f"commit {c.commit[:10]} · {worker or '?'} · episode {episode or '?'}"
              if c.commit else "commit unknown: no nomination, grade or review names it"),
             f"nominations {c.nominations} · {'verified' if c.verified else 'unverified'} ({tally(c)}; "
             f"{rule(p.verify)}) · grade: {grade_line(c.grade)}"]
    lines += trail_lines(c)
    text, where = candidate_text(memory, c)
    lines += ["", f"--- {c.path} ({where}) ---", text.rstrip("\n")]
    return lines, {"problem": p.id, **c.as_dict(), "selected": chosen, "worker": worker,
                   "episode": episode, "text": text}


def review_view(memory, p, spec: str, run: str) -> View:
    """One review file: its verdict and what it reviews (as the review's commit says), then its text."""
    entries = {e.path: (e, c) for c in p.candidates for e in c.trail}
    files = {i.path for i in memory.items(p.id, "review")} | set(entries)
    aliases = {path: (path, short(p.id, path), path.rsplit("/", 1)[-1],
                      *((entries[path][0].commit, entries[path][0].episode) if path in entries else ()))
               for path in files}
    path = match(spec, aliases, f"{run} has no review {spec!r} of {p.id}", "its reviews")
    data = memory.read_file(path) or b""
    lines = [f"review {path} of {p.id}"]
    found = {"problem": p.id, "path": path, "verdict": None, "reviews": None, "counted": False}
    if path in entries:
        e, c = entries[path]
        lines += [f"verdict: {e.verdict} · by {e.worker} · episode {e.episode} · commit {e.commit[:10]}",
                  f"reviews {short(p.id, c.path)}" + (f" ({c.commit[:10]})" if c.commit else "")]
        if e.person or not e.counted:
            lines.append(why_counted(e).strip(" ()"))
        found |= {**e.as_dict(), "reviews": c.path, "reviews_commit": c.commit}
    else:
        lines.append("not counted: no review commit with a verdict stands behind this file now "
                     "(a later review by the same worker, or a file that only looks like a review)")
    text = body(data)
    lines += ["", f"--- {path} ---", text.rstrip("\n")]
    return lines, found | {"text": text}


def pick_candidate(p, spec: str, run: str):
    """The candidate `spec` names (its path, relative path, name or commit id)."""
    by_key = {f"{c.path}\0{c.commit}": c for c in p.candidates}
    aliases = {key: (c.path, short(p.id, c.path), c.path.rsplit("/", 1)[-1], *((c.commit,) if c.commit else ()))
               for key, c in by_key.items()}
    key = match(spec, aliases, f"{run} has no candidate {spec!r} of {p.id}", "its candidates",
                shown={key: short(p.id, c.path) for key, c in by_key.items()})
    return by_key[key]


def match(spec: str, aliases: dict[str, tuple[str, ...]], what: str, named: str,
          shown: dict[str, str] | None = None) -> str:
    """The one key whose aliases include `spec` (a commit id by a prefix of 4 or more), else exit 2
    listing them, nearest first."""
    spec = spec.strip().rstrip("/")
    exact = [k for k, names in aliases.items() if spec in names]
    prefix = [k for k, names in aliases.items()
              if len(spec) >= 4 and any(len(n) == 40 and n.startswith(spec.lower()) for n in names)]
    found = list(dict.fromkeys(exact or prefix))
    names = shown or {k: names[1] for k, names in aliases.items()}
    if len(found) == 1:
        return found[0]
    if found:
        raise fail(f"{spec!r} names more than one: {', '.join(names[k] for k in found)}; give more of it")
    if not aliases:
        raise fail(f"{what}: it has none yet")
    raise unknown(what, spec, sorted(names.values()), named)


def candidate_text(memory, c) -> tuple[str, str]:
    """The candidate's text (a program: each of its files) and where it was read: main, else its commit."""
    snapshot = memory.snapshot()
    for at, where in ((snapshot.main, "on main"), (c.commit, f"at {(c.commit or '')[:10]}")):
        if at is None:
            continue
        tree = snapshot.tree(at)
        data = snapshot.blob(tree, c.path)
        if data is not None:
            return data.decode("utf-8", "replace"), where
        folder = snapshot.subtree(tree, c.path)
        if folder is not None:
            return program_text(snapshot, folder, c.path), where
    return "(its text is neither on main nor in its commit)", "missing"


def program_text(snapshot, folder, path: str) -> str:
    """Each file of a program folder (the tree `folder`, at `path`) under a heading, in a fenced block."""
    name = path.split("/", 2)[-1]
    return "\n".join(f"## {name}/{file}\n\n```\n{data.decode('utf-8', 'replace').rstrip()}\n```\n"
                     for file, data in snapshot.files(folder))


def trail_lines(c) -> list[str]:
    """A candidate's reviews, oldest first, one line each."""
    if c is None or not c.trail:
        return ["reviews: none yet"]
    return ["reviews:"] + [f"  {e.verdict:8} {e.worker} {e.episode} {e.path.split('/', 2)[-1]} ({e.commit[:10]})"
                           + why_counted(e) for e in c.trail]


def why_counted(e) -> str:
    """What a review counts for, as its line in `show` ends: a person's, counted or advice; its
    author's own; or nothing for a worker's counted review."""
    if e.person:
        return " (a person's review)" if e.counted else " (a person's review: advice, not counted)"
    return "" if e.counted else " (its author's own, not counted)"


def candidate_line(pid: str, c) -> str:
    """One candidate as a line of the list a problem without a selection shows."""
    commit = c.commit[:10] if c.commit else "-"
    return (f"{short(pid, c.path)}  {commit}  {c.nominations} nominations  {tally(c)}  "
            f"{'verified' if c.verified else 'unverified'}  grade {grade_line(c.grade)}")


def tally(c) -> str:
    r = c.reviews
    return f"{r.passed} pass, {r.gaps} gaps, {r.critical} critical"


def rule(verify: int) -> str:
    return f"needs {verify} passes and no critical" if verify else "no reviews needed (K = 0)"


def grade_line(grade) -> str:
    """The grade and who gave it; "not graded" when there is none."""
    from gitswarm.domain.grade import describe, statuses_line

    if grade is None:
        return "not graded (`gitswarm grade` grades a run's selected solutions)"
    statuses = statuses_line(grade)
    return (f"{describe(grade)} by {grade.grader}" + (f" ({grade.model})" if grade.model else "")
            + (f"\n  tests: {statuses}" if statuses else ""))


def short(pid: str, path: str) -> str:
    """A path in the repository, relative to its problem's folder."""
    return path.removeprefix(f"problems/{pid}/")


def body(data: bytes | None) -> str:
    """A file's text without its front matter."""
    from gitswarm.problems.frontmatter import FrontMatterError, split

    text = (data or b"").decode("utf-8", "replace")
    try:
        return split(text).body.lstrip("\n")
    except FrontMatterError:
        return text

