"""Checks of a run repository with plain git, for the chaos script and the tests: nothing
lost, nothing doubled, budget kept, main only forward, fsck clean, no hidden text anywhere."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

from gitswarm.core.status import CHARGED
from gitswarm.memory.commitmeta import git_key


def git(run: Path, *args: str, check: bool = True) -> str:
    """The output of the real git CLI in `run`."""
    done = subprocess.run(["git", "-C", str(run), *args], capture_output=True, text=True, check=check)
    return done.stdout


def reachable(run: Path) -> set[str]:
    """Every commit reachable from any ref (branches, op refs, notes, bookkeeping)."""
    return set(git(run, "rev-list", "--all").split())


def ops(run: Path) -> Counter:
    """How often each op id (the records' `op` trailer) appears in the history of all refs
    (merges included), as plain git reads it."""
    text = git(run, "log", "--all", f"--format=%(trailers:key={git_key('op')},valueonly)")
    return Counter(text.split())


def duplicated(run: Path) -> int:
    """Extra copies of operations: every op id must appear exactly once."""
    return sum(n - 1 for n in ops(run).values())


def charged(run: Path) -> int:
    """Charged episodes according to the ledger."""
    names = git(run, "ls-tree", "-r", "--name-only", "refs/gitswarm/ledger", check=False).split()
    if not names:
        return 0
    paths = [p for p in names if p.startswith("episodes/")]
    batch = "".join(f"refs/gitswarm/ledger:{p}\n" for p in paths)
    out = subprocess.run(["git", "-C", str(run), "cat-file", "--batch"], input=batch, capture_output=True,
                         text=True, check=True).stdout
    return sum(json.loads(body).get("status") in CHARGED for body in _batch_bodies(out))


def _batch_bodies(out: str) -> list[str]:
    bodies, rest = [], out
    while rest:
        header, rest = rest.split("\n", 1)
        size = int(header.split()[2])
        bodies.append(rest[:size])
        rest = rest[size + 1:]
    return bodies


def fsck_problems(run: Path) -> list[str]:
    """What `git fsck --full --strict` reports, dangling objects aside (unused trees are no damage)."""
    done = subprocess.run(["git", "-C", str(run), "fsck", "--full", "--strict"], capture_output=True, text=True)
    found = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip() and not ln.startswith("dangling ")]
    return found + ([f"exit code {done.returncode}"] if done.returncode else [])


def is_ancestor(run: Path, old: str, new: str = "main") -> bool:
    done = subprocess.run(["git", "-C", str(run), "merge-base", "--is-ancestor", old, new], capture_output=True)
    return done.returncode == 0


def all_objects(run: Path) -> bytes:
    """The content of every object in the repository: reachable or not, packed or loose."""
    return subprocess.run(["git", "-C", str(run), "cat-file", "--batch-all-objects", "--batch",
                           "--unordered"], capture_output=True, check=True).stdout


def hidden_leaks(run: Path, hidden: dict[str, list[str]], public: str = "", min_chars: int = 12) -> list[str]:
    """Hidden texts (problem id -> texts) found in any object. Short texts (an answer such as
    "9") cannot be told from chance and are skipped, their distinctive lines are not; lines
    also in `public` (the visible statement and starter, what the model itself writes) are no leak."""
    data = all_objects(run).decode("utf-8", "replace")
    leaks = []
    for problem, texts in hidden.items():
        for text in texts:
            needles = {text.strip()} | {ln.strip() for ln in text.splitlines()}
            for needle in sorted(n for n in needles if len(n) >= min_chars and not _generic(n) and n not in public):
                if needle in data:
                    leaks.append(f"{problem}: {needle[:70]!r}")
    return leaks


def public_text(problem_set) -> str:
    """What is no secret: every visible file of the set and the scripted model's own texts."""
    from gitswarm.demo.script import script

    visible = [data.decode("utf-8", "replace") for p in problem_set.problems for data in p.visible_files().values()]
    return "\n".join(visible) + "\n" + json.dumps(script(), ensure_ascii=False) + str(script())


def _generic(line: str) -> bool:
    """Lines of hidden test files that are plain Python boilerplate, not secrets."""
    return line.startswith(("import ", "from ", "def test_", "class ", "@pytest", "if __name__"))
