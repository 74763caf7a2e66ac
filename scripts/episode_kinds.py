"""Charged episodes of a run by what they did (note, attempt, code, revision, review,
nomination), from git alone, and its problems selected and verified (`gitswarm status --json`):
the figures that show where a run's budget went.

    python scripts/episode_kinds.py runs/demo [more runs...]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys

FORMAT = ("--format=%s%x1f%(trailers:key=Gitswarm-Kind,valueonly)%x1f"
          "%(trailers:key=Gitswarm-Episode,valueonly)%x1e")


def kinds(run: str) -> collections.Counter:
    """Each episode's contribution kind (an attempt or code whose title says it revises another
    counts as a revision); the merger's and the run's own commits have no episode."""
    log = subprocess.run(["git", "-C", run, "log", "--all", "--no-merges", FORMAT],
                         capture_output=True, text=True, check=True).stdout
    seen: dict[str, str] = {}
    for entry in log.split("\x1e"):
        if not entry.strip():
            continue
        subject, kind, episode = (x.strip() for x in entry.split("\x1f"))
        if episode and kind:
            seen[episode] = "revision" if kind in ("attempt", "code") and "revises" in subject else kind
    return collections.Counter(seen.values())


def line(run: str) -> str:
    status = json.loads(subprocess.run([sys.executable, "-m", "gitswarm", "status", run, "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    selected = [p["id"] for p in status["problems"] if p.get("selected")]
    verified = [p["id"] for p in status["problems"] if p.get("verification") == "verified"]
    return (f"{run}: charged {status['totals']['charged']} of {status['totals']['episodes']} episodes; by kind "
            f"{dict(sorted(kinds(run).items()))}; selected {len(selected)}/{len(status['problems'])} "
            f"({len(verified)} verified)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", default=["runs/demo"], metavar="RUN", help="run folders (default runs/demo)")
    for run in parser.parse_args().runs:
        print(line(run))


if __name__ == "__main__":
    main()
