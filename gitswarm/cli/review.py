"""`gitswarm review RUN PROBLEM CANDIDATE --verdict V FILE`: a person's review of a candidate.
What it counts for is the run's `person_reviews` setting: `advice` (shown, not counted) or
`counts` (counted toward verification like a worker's; a critical one blocks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from gitswarm.cli.common import user_errors
from gitswarm.cli.note import AuthorOpt


def review(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/demo, or the git remote URL of a run "
                                       "there.", show_default=False)],
    problem: Annotated[str, typer.Argument(help="The problem id, e.g. demo-odd-sum.", show_default=False)],
    candidate: Annotated[str, typer.Argument(
        help="The candidate reviewed: its path (attempts/x.md, code/<slug>) or its commit id.", show_default=False)],
    file: Annotated[Path, typer.Argument(help="The file holding your review (Markdown).", show_default=False)],
    verdict: Annotated[Literal["pass", "gaps", "critical"], typer.Option(
        help="pass: no issue; gaps: justification gaps only; critical: an error that breaks the argument.",
        show_default=False)],
    author: AuthorOpt = None,
) -> None:
    """Record a person's review of a candidate of a run, finished or running.

    The review is a commit like a worker's review, authored by you and marked as a person's.
    The run's setting --person-reviews says what it counts for: advice (the default: shown to
    the workers and by `gitswarm show`, not counted), or counts (it counts toward verification
    like a worker's, and a critical one blocks the candidate).

    \b
    Examples:
      gitswarm review runs/demo demo-odd-sum attempts/first-try-e00007.md review.md --verdict critical
      gitswarm show runs/demo demo-odd-sum --candidate first-try-e00007.md
    Exit codes: 0 written, 2 bad input (nothing written).
    """
    from gitswarm.cli import person

    with user_errors():
        text = person.read_text(file)
        if person.is_remote(run):
            landed = person.push_remote(run, problem, lambda memory: _review(memory, run, problem, candidate,
                                                                            verdict, text, author))
        else:
            memory = person.open_run(run, problem)
            landed = person.land(memory, _review(memory, run, problem, candidate, verdict, text, author))
    typer.echo(f"review {landed.commit[:12]} ({verdict}) by a person of {candidate} on {problem}: {landed.note}")


def _review(memory, run: str, problem: str, candidate: str, verdict: str, text: str, author: str | None):
    from gitswarm.cli import person
    from gitswarm.cli.log import unknown

    index = person.index_of(memory)
    found = next(filter(None, (index.resolve(problem, ref) for ref in (candidate, f"attempts/{candidate}",
                                                                     f"code/{candidate}"))), None)
    if found is None:
        raise unknown(f"{run} has no candidate {candidate!r} of {problem}", candidate,
                      list(index.candidates(problem)), "its candidates")
    commit, path = found
    name = person.slug(path.rsplit("/", 1)[-1].removesuffix(".md"))
    return person.contribution(memory, author, problem=problem, kind="review", title=f"{verdict}: {path}",
                               files={person.free_path(memory, problem, "reviews", f"person-{name}"): text},
                               informed_by=(commit,), reviews=commit, verdict=verdict,
                               summary=f"A person's review of {path} ({commit[:12]}): {verdict}.")
