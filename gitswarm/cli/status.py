"""`gitswarm status RUN`: where each problem stands, from main's tree and the ledger."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from gitswarm.cli.common import user_errors

FOLDERS = ("notes", "lemmas", "attempts", "reviews", "code")


def status(
    run: Annotated[Path, typer.Argument(help="The run folder, e.g. runs/imo.", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object, for scripts.")] = False,
) -> None:
    """Show each problem's state (open, in progress, nominated, selected) and the run's totals.

    Reads main's tree and the ledger, never the whole history, so it is fast on large runs.
    """
    from gitswarm.cli.solve import usd
    from gitswarm.engine.ledger import Ledger
    from gitswarm.memory.repo import Memory
    from gitswarm.report.render import usage_line

    with user_errors():
        memory = Memory(run)
        root = main_tree(memory)
        rows = [_problem(memory, p, root) for p in memory.problems()]
        spent = Ledger.summary(memory)
    cost, known = spent.cost
    totals = {"run": memory.run_id, "episodes": spent.episodes,
              "charged": spent.charged, "tokens": spent.tokens,
              "cost_usd": round(cost, 6) if known else None, "pending_branches": len(memory.pending()),
              **spent.parts()}
    if as_json:
        typer.echo(json.dumps({"totals": totals, "problems": rows}, indent=2))
        return
    typer.echo(f"run {totals['run']}: {totals['charged']} charged episodes ({totals['episodes']} in all), "
               f"{totals['tokens']} tokens, "
               + usd(cost, known)
               + (f", {totals['pending_branches']} branch(es) not yet merged" if totals["pending_branches"] else ""))
    typer.echo(f"  {usage_line(spent.parts())}")
    typer.echo(f"\n{'PROBLEM':28} {'STATE':11} {'NOTES':>5} {'LEMMAS':>6} {'ATTEMPTS':>8} {'REVIEWS':>7} "
               f"{'VOTES':>5} {'GRADE':>16}  SELECTED")
    for r in rows:
        c = r["counts"]
        typer.echo(f"{r['id']:28} {r['state']:11} {c['notes']:5} {c['lemmas']:6} "
                   f"{c['attempts'] + c['code']:8} {c['reviews']:7} {r['nominations']:5} {r['grade'] or '-':>16}  "
                   f"{r['selected'] or '-'}")


def _problem(memory, problem: str, root=None) -> dict:
    """One problem's row, from main's tree (`root`, resolved once by the caller) alone."""
    from gitswarm.problems.frontmatter import FrontMatterError, split

    repo = memory.repo
    root = root if root is not None else main_tree(memory)
    base = _subtree(repo, root, f"problems/{problem}")
    counts = Counter({f: _count(repo, base, f) for f in FOLDERS})
    votes = Counter()
    nominations = _subtree(repo, base, "nominations")
    for entry in nominations or ():
        try:
            votes[split(repo[entry.id].data.decode()).values.get("candidate")] += 1
        except (FrontMatterError, AttributeError, UnicodeDecodeError):
            continue
    selected = candidate = None
    solution = _blob(repo, base, "SOLUTION.md")
    if solution:
        values = split(solution.decode()).values
        selected, candidate = values.get("path"), values.get("candidate")
    work = sum(counts.values())
    state = ("selected" if selected else "nominated" if votes else
             "candidate" if counts["attempts"] + counts["code"] else "in progress" if work else "open")
    return {"id": problem, "state": state, "counts": dict(counts), "nominations": sum(votes.values()),
            "top_candidate": votes.most_common(1)[0][0] if votes else None, "selected": selected,
            "grade": _grade(memory, problem, candidate)}


def main_tree(memory):
    import pygit2

    return memory.repo.revparse_single(memory.main()).peel(pygit2.Tree)


def _subtree(repo, tree, path: str):
    """The tree at `path` below `tree`, or None."""
    from pygit2.enums import FileMode

    from gitswarm.memory.trees import lookup

    entry = lookup(tree, path)
    return repo[entry[0]] if entry is not None and entry[1] == FileMode.TREE else None


def _blob(repo, tree, path: str) -> bytes | None:
    """The file at `path` below `tree`, or None."""
    from pygit2.enums import FileMode

    from gitswarm.memory.trees import lookup

    entry = lookup(tree, path)
    return repo[entry[0]].data if entry is not None and entry[1] != FileMode.TREE else None


def _grade(memory, problem: str, candidate: str | None) -> str | None:
    """The referee's verdict on the selected candidate, as `gitswarm grade` stored it."""
    from gitswarm.referee.grades import GradeStore, describe

    grades = GradeStore(memory).for_candidate(problem, candidate) if candidate else []
    return describe(max(grades, key=lambda g: g.time)) if grades else None


def _count(repo, base, folder: str) -> int:
    """Files below `folder` of the tree `base`, counted from trees alone (no blob is read): a
    diff against the empty tree counts them in libgit2, 3x faster than walking the entries."""
    sub = _subtree(repo, base, folder)
    return 0 if sub is None else len(sub.diff_to_tree(swap=True))
