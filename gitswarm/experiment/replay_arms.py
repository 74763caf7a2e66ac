"""The runs of a replay's two arms, made from the original run without touching it.

Each draw (one episode) is an ordinary run in `<out>/<arm>/episode-NN/`: a new bare repository
that fetches only the original's `main` and `refs/gitswarm/meta` (git reads the original and
writes nothing there), so none of its bookkeeping refs (ledger, grades, transcripts and notes,
ops, swarm/ branches) comes along and budget, numbering and selection start fresh. `main` is
then set to the start commit, or for the without-memory arm to one commit on top of it that
deletes the cited files (a `commitmeta.Removal` record), so the engine's index drops those
items. Each draw is its own run because the engine starts a run's later episodes from the
memory its earlier ones made: K runs of one episode are K fresh draws from the same state.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gitswarm.domain.kinds import Kind
from gitswarm.experiment.replay import ReplayError, Target
from gitswarm.memory import commitmeta
from gitswarm.memory.gitdir import GitDir
from gitswarm.memory.repo import META_REF

WITH, WITHOUT = "with-memory", "without-memory"
ARMS = (WITH, WITHOUT)
MAIN = "refs/heads/main"
REMOVAL_KIND = Kind.REPLAY
"""The kind of the commit that removes the cited memory."""


@dataclass(frozen=True)
class Draw:
    """One episode of one arm: a run of its own, seeded as the same-numbered draw of the other arm."""

    arm: str
    number: int
    seed: int
    path: Path

    @property
    def name(self) -> str:
        return f"{self.arm} episode {self.number}"


def default_out(run: Path, problem: str, candidate: str) -> Path:
    """`replays/<run name>-<P>-<C[:10]>`."""
    return Path("replays") / f"{Path(run).resolve().name}-{problem}-{candidate[:10]}"


def draws(out: Path, episodes: int, seed: int) -> list[Draw]:
    """`episodes` draws per arm, the n-th of each with seed `seed + n - 1`, the arms interleaved
    so that the pairs complete in order."""
    return [Draw(arm, n, seed + n - 1, out / arm / f"episode-{n:02d}")
            for n in range(1, episodes + 1) for arm in ARMS]


def prepare(target: Target, draw: Draw) -> bool:
    """Make the draw's run from the original, unless it is there; True when made. It is built
    in `<name>.part` and renamed when complete, so a kill never leaves half a run."""
    if (draw.path / "HEAD").exists():
        return False
    if draw.path.exists():
        raise ReplayError(f"{draw.path} exists and is not a run: remove it to let the replay make it")
    part = draw.path.with_name(draw.path.name + ".part")
    if part.exists():
        _remove(part)
    part.parent.mkdir(parents=True, exist_ok=True)
    made = GitDir.init(part, initial_head="main")
    _fetch(target.run, part)
    start = target.start if draw.arm == WITH else removal_commit(made, target)
    made.move(MAIN, start, made.ref(MAIN))  # main as fetched: a fresh `.part` no other process writes
    _meta(made, target, draw)
    part.rename(draw.path)
    return True


def _fetch(run: Path, into: Path) -> None:
    done = subprocess.run(["git", "-C", str(into), "fetch", "--quiet", "--no-tags", "--update-head-ok",
                           str(Path(run).resolve()), f"{MAIN}:{MAIN}", f"{META_REF}:{META_REF}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ReplayError(f"git could not read the run {run} ({' '.join(done.stderr.split())}); check that it is "
                          "a readable gitswarm run")


def removal_commit(made: GitDir, target: Target) -> str:
    """The start commit without the cited files: the same commit in every draw (its times are
    the start commit's), so the arm's runs share their first commits as the other arm's do."""
    prefix = f"problems/{target.problem.id}/"
    short = target.candidate[:10]
    body = (f"A replay of {short} asks whether the memory it cited caused its result. This arm starts from "
            f"its start state {target.start[:10]} without the files of the commits it cites "
            f"({', '.join(c[:10] for c in target.cited)}), so its episodes cannot read them.")
    record = commitmeta.Removal(run=target.run_id, problem=target.problem.id, replays=target.candidate,
                                deleted=tuple(target.removed))
    message = commitmeta.encode(record, f"replay({target.problem.id}): remove the memory {short} cited", body)
    return made.commit(dict.fromkeys((prefix + path for path in target.removed), None), message, [target.start],
                       base=target.start, when=made.commit_time(target.start))


def _meta(made: GitDir, target: Target, draw: Draw) -> None:
    """The run's metadata as a child of the original's: its own run id, and what it replays."""
    parent = made.ref(META_REF)
    found = made.file(parent, "run.json") if parent is not None else None
    if parent is None or found is None:
        raise ReplayError(f"{target.run} has no run metadata ({META_REF}:run.json): it is not a gitswarm run")
    meta = json.loads(found)
    meta["run_id"] = f"{target.run_id}-replay-{target.candidate[:10]}-{draw.arm}-{draw.number:02d}"
    meta["replay"] = {"of": target.run_id, "run": str(Path(target.run).resolve()), "problem": target.problem.id,
                      "candidate": target.candidate, "start": target.start, "arm": draw.arm,
                      "episode": draw.number, "seed": draw.seed}
    commit = made.commit({"run.json": json.dumps(meta, indent=2).encode()},
                         f"gitswarm: replay of {target.candidate[:10]}, {draw.name}\n", [parent], base=parent,
                         when=made.commit_time(parent))
    made.move(META_REF, commit, parent)


def _remove(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder)
