"""`gitswarm sandbox check`: which containment this machine gives the programs of code problems, and why."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gitswarm.cli.common import Exit, user_errors

app = typer.Typer(help="The sandbox that runs the programs of code problems (program, reproduce).",
                  no_args_is_help=True, rich_markup_mode=None, add_completion=False)


def report() -> dict:
    """The backend programs run under here, what it gives, and why each other one is not used."""
    from gitswarm.sandbox import containment
    from gitswarm.sandbox.backends import HOW_TO_FIX, order
    from gitswarm.sandbox.engines import found as engines

    found = containment()
    tried = [b.name for b in order()]
    box = engines()
    return {"ok": found.backend is not None, "backend": found.backend.name if found.backend else None,
            "gives": found.backend.gives if found.backend else None, "order": tried,
            "refused": found.refused, "fix": None if found.backend else HOW_TO_FIX,
            "container": {"engine": box.engine.label if box.engine else None,
                          "path": box.engine.path if box.engine else None,
                          "gives": CONTAINER_GIVES if box.engine else None, "refused": box.refused,
                          "fix": None if box.engine else box.problem()}}


CONTAINER_GIVES = ("problems that name an image run every program in a container of it: no network, no "
                   "capability, an unprivileged user, memory, process and time bounds; the image and the code "
                   "tree only")


def lines(found: dict) -> list[str]:
    """The report as the terminal shows it."""
    if found["ok"]:
        shown = [f"sandbox: {found['backend']} ({found['gives']})"]
    else:
        shown = ["sandbox: NONE: code problems are refused here (solve --unconfined runs them without one)"]
    shown += [f"  not {name}: {why}" for name, why in found["refused"].items()]
    shown += [f"  tried in this order: {', '.join(found['order']) or 'none (GITSWARM_SANDBOX is empty)'}"
              " (GITSWARM_SANDBOX sets it)"]
    shown += [f"  to fix: {found['fix']}"] if found["fix"] else []
    box = found["container"]
    if box["engine"]:
        shown.append(f"container: {box['engine']} ({box['path']}): {box['gives']}")
    else:
        shown.append(f"container: NONE: problems that name an image are refused here ({box['fix']})")
    return shown


@app.command("check")
def check(as_json: Annotated[bool, typer.Option("--json", help="One JSON object, for scripts.")] = False) -> None:
    """Probe the sandbox backends in order (bubblewrap, then gitswarm's own namespaces; as root the
    other way round) with one tiny program each, and say which one confines programs here; then
    the container engine (podman, then docker; GITSWARM_CONTAINER_ENGINE names one) that runs
    the programs of problems that name an image. Exit 0 when a backend confines programs, 1 when
    none does (code problems are then refused by solve)."""
    with user_errors():
        found = report()
    typer.echo(json.dumps(found) if as_json else "\n".join(lines(found)))
    raise typer.Exit(int(Exit.OK if found["ok"] else Exit.FAILED))
