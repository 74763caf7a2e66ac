"""Where a run's budget went: its charged episodes by what they did (note, attempt, code,
revision, review, nomination), read from git alone, with the run's tokens, its summaries (the
merger model's and those assembled without a model call) and its problems selected and verified
(`gitswarm status --json`). One line per run; a run whose every first attempt passes spends
K + 1 charged episodes per problem (an attempt and K reviews) in every arm.

    python scripts/episode_kinds.py runs/demo [more runs...]
    python scripts/episode_kinds.py experiments/reviews/runs/*
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


def summaries(run: str) -> tuple[int, int]:
    """The merger model's summaries and the digests assembled without a model call."""
    subjects = subprocess.run(["git", "-C", run, "log", "--all", "--format=%s"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    model = sum(s.startswith("summary(") and "the merger's summary" in s for s in subjects)
    assembled = sum(s.startswith("summary(") and "without a model call" in s for s in subjects)
    return model, assembled


def line(run: str) -> str:
    """One run's figures as one line."""
    status = json.loads(subprocess.run([sys.executable, "-m", "gitswarm", "status", run, "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    selected = [p["id"] for p in status["problems"] if p.get("selected")]
    verified = [p["id"] for p in status["problems"] if p.get("verification") == "verified"]
    totals = status["totals"]
    model, assembled = summaries(run)
    return (f"{run}: charged {totals['charged']} of {totals['episodes']} episodes, {totals['tokens']} tokens; "
            f"by kind {dict(sorted(kinds(run).items()))}; summaries {model} by the model, {assembled} assembled; "
            f"selected {len(selected)}/{len(status['problems'])} ({len(verified)} verified)")


def main(argv: list[str] | None = None) -> int:
    """Print one line per run folder given (default: runs/demo)."""
    parser = argparse.ArgumentParser(
        prog="episode_kinds.py", description=__doc__.split("\n\n")[0],
        epilog="Each line: charged of all episodes and the run's tokens; the charged episodes by "
               "kind; SUMMARY.md commits by the merger model and assembled; problems selected "
               "(verified). Needs git and gitswarm on PATH's python.")
    parser.add_argument("runs", nargs="*", default=["runs/demo"], help="run folders (bare repositories)")
    for run in parser.parse_args(argv).runs:
        print(line(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
