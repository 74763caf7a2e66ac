"""`gitswarm note RUN PROBLEM FILE`: a person's note (or lemma) in a problem's folder, which the
workers see in their item list marked "by a person" and may cite (`cli/person.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from gitswarm.cli.common import user_errors

AuthorOpt = Annotated[str | None, typer.Option(
    help='Who writes it, as "Name <email>" (default: git\'s user.name and user.email).', metavar="NAME_EMAIL")]


def note(
    run: Annotated[str, typer.Argument(help="The run folder, e.g. runs/demo, or the git remote URL of a run "
                                       "there.", show_default=False)],
    problem: Annotated[str, typer.Argument(help="The problem id, e.g. demo-odd-sum.", show_default=False)],
    file: Annotated[Path, typer.Argument(help="The file holding your note (Markdown).", show_default=False)],
    title: Annotated[str | None, typer.Option(help="Its title: the commit's subject and the file's name "
                                              "(default: the file's first line).")] = None,
    kind: Annotated[Literal["note", "lemma"], typer.Option(
        help="note: an observation, a hint, a dead end; lemma: a claim with its proof.")] = "note",
    cites: Annotated[list[str] | None, typer.Option(
        "--cites", help="A commit of the run the note builds on (repeat for several).", metavar="COMMIT")] = None,
    author: AuthorOpt = None,
) -> None:
    """Add a person's note (or lemma) to a problem of a run, finished or running.

    The note is a commit like a worker's contribution, with the same checks, authored by you
    and marked as a person's. With no solve running on the run, it is merged into main at once;
    while one runs, that run's merger composes it within a few seconds, and the next episodes
    on the problem see it in their item list, marked "by a person". The workers read it as
    data, like every other text in the memory: a hint, not an order.

    \b
    Examples:
      gitswarm note runs/demo demo-odd-sum hint.md --title "try induction on n"
      gitswarm note runs/demo demo-odd-sum lemma.md --kind lemma --cites 3f2a9c1e
      gitswarm note git://server/imo.git imo-2025-p1 hint.md
    Exit codes: 0 written, 2 bad input (nothing written).
    """
    from gitswarm.cli import person

    with user_errors():
        text = person.read_text(file)
        heading = title or next((line.lstrip("# ").strip() for line in text.splitlines() if line.strip()), file.stem)
        if person.is_remote(run):
            landed = person.push_remote(run, problem, lambda memory: _note(memory, problem, kind, heading, text,
                                                                          cites or [], author))
        else:
            memory = person.open_run(run, problem)
            landed = person.land(memory, _note(memory, problem, kind, heading, text, cites or [], author))
    typer.echo(f"{kind} {landed.commit[:12]} by a person on {problem}: {landed.note}")


def _note(memory, problem: str, kind: str, title: str, text: str, cites: list[str], author: str | None):
    from gitswarm.cli import person

    path = person.free_path(memory, problem, f"{kind}s", person.slug(title))
    return person.contribution(memory, author, problem=problem, kind=kind, title=title, files={path: text},
                               informed_by=tuple(person.commits(memory, cites)),
                               summary="Written by a person, not by a worker of the swarm.")
