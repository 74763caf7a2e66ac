"""Build large synthetic runs fast: `git fast-import` writes commits in the run's own format.

Used by bench.py for the start-up figure (a run of 100,000 commits).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gitswarm.domain.episode import FIGURES
from gitswarm.memory.repo import Memory
from gitswarm.memory.trailers import Message
from gitswarm.problems.loader import load_set

NOTE = "# Observation {i}\n\nChecked the case n = {i} by hand; it fits the pattern of the others.\n"


def write_set(folder: Path, problems: int, kind: str = "answer") -> Path:
    """A problem set of `problems` small problems (hidden answers marked HIDDEN-)."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(problems):
        (folder / f"p{k:03d}.md").write_text(
            f"---\nid: p{k:03d}\ntitle: Problem {k}\nkind: {kind}\nanswer: 'HIDDEN-ANSWER-{k}'\n---\n"
            f"What is ${k} + {k}$? Give the number.\n")
    return folder


def new_run(root: Path, problems: int) -> Memory:
    """A fresh run repository of `problems` problems under `root`."""
    problem_set = load_set(write_set(root / "set", problems))
    return Memory.create(root / "run", problem_set, run_id="bench")


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw + b"\n"


def _message(run_id: str, i: int, problem: str, path: str) -> str:
    trailers = {"Run": run_id, "Episode": f"e{i:06d}", "Op": f"e{i:06d}-final", "Worker": f"w{i % 64:02d}",
                "Problem": problem, "Kind": "note", "Model": "bench", "Tokens": "in=1000 out=200",
                "Cost-USD": "unknown", "Files": path}
    return Message(f"note({problem}): observation {i}", "A synthetic contribution.", trailers).render()


def fast_import(repo: Path, stream: bytes) -> dict[str, str]:
    """Feed a fast-import stream; returns its marks (":n" -> commit id)."""
    marks = repo / "bench-marks"
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet", f"--export-marks={marks}"],
                   input=stream, check=True)
    found = dict(line.split() for line in marks.read_text().splitlines())
    marks.unlink()
    return found


def add_history(memory: Memory, commits: int, problems: list[str], ledger: bool = False) -> None:
    """Append `commits` note contributions to main (round robin over `problems`), with their
    op refs and, if `ledger`, one ledger record per episode: the shape of a long run."""
    parts: list[bytes] = []
    parent = memory.main()
    for i in range(1, commits + 1):
        problem = problems[i % len(problems)]
        path = f"notes/n{i:06d}.md"
        parts.append(b"commit refs/heads/main\nmark :%d\n" % i)
        parts.append(b"author w%02d <w@gitswarm.local> %d +0000\n" % (i % 64, 1_700_000_000 + i))
        parts.append(b"committer gitswarm <gitswarm@gitswarm.local> %d +0000\n" % (1_700_000_000 + i))
        parts.append(_data(_message(memory.run_id, i, problem, path)))
        if i == 1:
            parts.append(f"from {parent}\n".encode())
        parts.append(f"M 100644 inline problems/{problem}/{path}\n".encode() + _data(NOTE.format(i=i)))
    if ledger:
        parts.append(_ledger_stream(commits, problems))
    marks = fast_import(memory.path, b"".join(parts))
    _pack_op_refs(memory.path, [(f"refs/gitswarm/ops/e{i:06d}-final", marks[f":{i}"]) for i in range(1, commits + 1)])


def _ledger_stream(commits: int, problems: list[str]) -> bytes:
    parts = [b"commit refs/gitswarm/ledger\n",
             b"committer gitswarm <gitswarm@gitswarm.local> 1700000000 +0000\n", _data("ledger: bench\n")]
    for i in range(1, commits + 1):
        episode = f"e{i:06d}"
        record = {"episode": episode, "worker": f"w{i % 64:02d}", "problem": problems[i % len(problems)],
                  "status": "contribute", "commit": None, "tokens_in": 1000, "tokens_out": 200,
                  "cost_usd": 0.0, "cost_known": False, "calls": 4, "started": 1.7e9, "ended": 1.7e9,
                  "note": ""}
        parts.append(f"M 100644 inline episodes/{episode[:4]}/{episode}.json\n".encode()
                     + _data(json.dumps(record, sort_keys=True, indent=1)))
    # The scheduler record as the ledger writes it now: every figure (one missing makes a
    # reader sum the records one by one, as for a run written before totals were kept).
    totals = {**dict.fromkeys(FIGURES, 0), "episodes": commits, "charged": commits, "tokens_in": 1000 * commits,
              "tokens_out": 200 * commits, "cost_usd": 0.0, "cost_unknown": commits, "calls": commits}
    state = {"next_number": commits + 1, "rng_state": None, "totals": totals}
    parts.append(b"M 100644 inline scheduler.json\n" + _data(json.dumps(state, sort_keys=True, indent=1)))
    return b"".join(parts)


def _pack_op_refs(repo: Path, refs: list[tuple[str, str]]) -> None:
    """Op refs as `git pack-refs` would leave them (one loose ref file each would be slower)."""
    subprocess.run(["git", "-C", str(repo), "pack-refs", "--all"], check=True)
    packed = repo / "packed-refs"
    lines = packed.read_text().splitlines()
    head = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")] + [f"{sha} {name}" for name, sha in refs]
    body.sort(key=lambda ln: ln.split(" ", 1)[1])  # a fresh run has no annotated tags (no "^" lines)
    packed.write_text("\n".join(head + body) + "\n")
