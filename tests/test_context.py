"""Context economy: an episode's first prompt does not grow with the memory. The real engine
and the scripted model behind the fake server, on run repositories under tmp_path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
from demo_run import run_set

from gitswarm.domain.contribution import Contribution
from gitswarm.domain.kinds import VERDICTS
from gitswarm.engine.tools.search import SEARCH_HITS, Search, search
from gitswarm.fakeserver.responders import estimate_tokens
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set

HOT = 10
"""Items 0..9 are cited by later ones, item j by fewer than item j - 1."""
ROW = re.compile(r"^\| ((?:notes|lemmas|attempts|reviews)/\S+) \|", re.MULTILINE)


def grow(memory: Memory, size: int, batch: int = 25) -> list[str]:
    """`size` contributions to problem `sum` through Memory.contribute and compose; item k >= 10
    cites items 0..k % 10, and each review gives the attempt before it a verdict. Returns the
    item paths, oldest first."""
    commits, paths = [], []
    for first in range(0, size, batch):
        start, episodes = memory.main(), []
        for k in range(first, min(size, first + batch)):
            kind = ("note", "lemma", "attempt", "review")[k % 4]
            path = f"{kind}s/{kind}-{k:04d}.md"
            cited = tuple(commits[: k % HOT + 1]) if k >= HOT else ()
            review = {"reviews": commits[k - 1], "verdict": VERDICTS[k % 3]} if kind == "review" else {}
            written = memory.contribute(Contribution(
                "sum", f"s{k:04d}", f"w{k % 5:02d}", kind, f"{kind} {k}",
                {path: f"# {kind.title()} {k}\n\nText {k}.\n"}, start, f"s{k:04d}-final", informed_by=cited,
                **review))
            commits.append(written.commit)
            paths.append(path)
            episodes.append(f"s{k:04d}")
        memory.compose(episodes)
    return paths


def first_prompt(problem_dir: Path, run: Path, size: int) -> tuple[str, int, list[str]]:
    """One real episode on a memory of `size` items: its first prompt, that prompt's tokens as
    the server reports them, and the item paths."""
    paths = grow(Memory.create(run, load_set(problem_dir), problem_ids=["sum"]), size)
    _, server = anyio.run(lambda: run_set(problem_dir, run, workers=1, verify=0, budget=1))
    request = next(r for r in server.requests if r.get("tools"))
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return user, estimate_tokens(json.dumps(request["messages"])), paths


def test_first_prompt_stays_bounded_and_shows_the_most_cited_and_the_newest(tmp_path: Path,
                                                                             problem_dir: Path):
    small, small_tokens, _ = first_prompt(problem_dir, tmp_path / "small", 10)
    big, big_tokens, paths = first_prompt(problem_dir, tmp_path / "big", 300)
    assert len(ROW.findall(small)) == 10 and "more items are not shown" not in small
    shown = ROW.findall(big)
    assert len(shown) == 16
    assert big_tokens <= 1.2 * small_tokens, (small_tokens, big_tokens)
    assert set(paths[:8]) | set(paths[-8:]) == set(shown)  # the 8 most cited, then the 8 newest
    assert shown[:8] == paths[:8]  # most cited first
    assert "284 more items are not shown" in big and "`list_items`" in big and "`search`" in big
    table = big.split('<memory-data source="item list', 1)[1].split("</memory-data>", 1)[0]
    assert all(path in table for path in shown)  # the rows stay inside the fence
    assert re.search(r"^\| attempts/attempt-0002\.md \| \w+ \| \d+ \| 1 pass \|", big, re.M)  # its review
    assert re.search(r"^\| attempts/attempt-0006\.md \| \w+ \| \d+ \| 1 gaps \|", big, re.M)


def test_search_reads_the_newest_items_first_in_one_git_call(tmp_path: Path, problem_dir: Path):
    from gitswarm.domain.index import MemoryIndex
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.plan import EpisodePlan
    from gitswarm.engine.runview import RunView
    from gitswarm.engine.tools import Toolbox
    from gitswarm.memory.store import Store

    memory = Memory.create(tmp_path / "run", load_set(problem_dir), problem_ids=["sum"])
    paths = grow(memory, 60)
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    view = RunView(SolveConfig(problems=problem_dir, run=tmp_path / "run", model="m"), ["sum"])
    ep = EpisodePlan("e1", "w01", "sum", "answer", "Sum", memory.main())
    tools = Toolbox(Store(memory), index, view, ep, anyio.CapacityLimiter(1))

    found = anyio.run(search, tools, Search(query="text"))
    lines = [ln for ln in found.splitlines() if re.match(r"^\w+s/\S+:\d+: ", ln)]
    assert len(lines) == SEARCH_HITS
    assert lines[0].startswith(f"{paths[-1]}:") and lines[1].startswith(f"{paths[-2]}:")
    assert "<memory-data" in found  # results are other agents' text: fenced
    assert "no matches" in anyio.run(search, tools, Search(query="no such words anywhere"))
