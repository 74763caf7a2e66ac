"""The context-economy figure of bench.py: prompt tokens of an episode's first model call as
one problem's memory grows, measured through the real engine (the scripted model behind the
fake server, the real litellm path) on a synthetic memory of N contributions.

The memory is written with `git fast-import` in the engine's own commit format (the
messages are `gitswarm.memory.write.message`): through Memory.contribute and compose the
build is quadratic in one folder's size (every contribution rewrites the folder's tree;
2,000 contributions took 87 s), while fast-import writes 10,000 in seconds.

`python scripts/bench_context.py [10,100,1000,10000]` prints the figures as one JSON line.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio
from bench_history import fast_import, write_set

from gitswarm.domain.contribution import Contribution
from gitswarm.domain.kinds import Kind
from gitswarm.memory import commitmeta
from gitswarm.memory.repo import Memory
from gitswarm.memory.write import message
from gitswarm.problems.loader import load_set

PROBLEM = "p000"
KINDS = ["note"] * 10 + ["lemma"] * 4 + ["attempt"] * 3 + ["review"] * 3
"""The kind of contribution i is KINDS[i % 20]: mostly notes, as in real runs."""
TEXT = {"note": "# Observation {i}: the case n = {i} fits the pattern\n\nChecked by hand; see the table.\n",
        "lemma": "# Lemma {i}: the bound holds for every n up to {i}\n\nProof. By induction on n.\n",
        "attempt": "# Attempt {i}: a full solution by the bound of the lemmas\n\nVerdict: partial.\n",
        "review": "# Review {i}: one justification gap in step 3 of the attempt\n\nVerdict: gap.\n"}
SUMMARY = ("# Summary\n\n{n} contributions so far. Proved: the bound for small n (lemmas, most "
           "cited first: {top}). Open: the general case; the attempts have justification gaps.\n")
CHUNKS = 20
"""Imports per memory: citations point to commits of earlier imports (their ids are known)."""


def build(root: Path, size: int, seed: int = 0) -> Memory:
    """A run of one problem whose memory holds `size` contributions citing each other (each
    cites up to two earlier ones, preferring the already cited), and a SUMMARY.md."""
    memory = Memory.create(root / "run", load_set(write_set(root / "set", 1)), run_id="bench-context")
    rng, done = random.Random(seed), 0
    pool: list[str] = []
    chunk = -(-size // min(size, CHUNKS))
    while done < size:
        batch = range(done + 1, min(size, done + chunk) + 1)
        cites = [tuple(dict.fromkeys(rng.choice(pool) for _ in range(2))) if pool else () for _ in batch]
        marks = fast_import(memory.path, _stream(memory, batch, cites))
        pool += [marks[f":{i}"] for i in batch] + [c for cited in cites for c in cited]
        done = batch[-1]
    top = ", ".join(c[:12] for c, _ in Counter(pool).most_common(3))
    memory.commit_to_main({f"problems/{PROBLEM}/SUMMARY.md": SUMMARY.format(n=size, top=top).encode()},
                          f"summary({PROBLEM}): the merger's summary of the problem",
                          commitmeta.ContributionRecord(op="bench-summary", problem=PROBLEM,
                                                  kind=Kind.SUMMARY, worker="merger"))
    return memory


def _stream(memory: Memory, batch: range, cites: list[tuple[str, ...]]) -> bytes:
    parts = []
    for i, informed in zip(batch, cites, strict=True):
        kind = KINDS[i % len(KINDS)]
        path = f"{kind}s/{kind}-{i:06d}.md"
        c = Contribution(PROBLEM, f"s{i:06d}", f"w{i % 64:02d}", kind, f"{kind} {i}",
                         {path: TEXT[kind].format(i=i)}, parent="", op=f"s{i:06d}-final",
                         summary="A synthetic contribution.", informed_by=informed, model="bench",
                         self_assessment="partial")
        parts.append(b"commit refs/heads/main\nmark :%d\n" % i)
        parts.append(b"author %s <%s@gitswarm.local> %d +0000\n" % (c.worker.encode(), c.worker.encode(),
                                                                   1_700_000_000 + i))
        parts.append(b"committer gitswarm <gitswarm@gitswarm.local> %d +0000\n" % (1_700_000_000 + i))
        parts.append(_data(message(memory.run_id, c)))
        if i == batch[0]:
            parts.append(f"from {memory.main()}\n".encode())
        parts.append(f"M 100644 inline problems/{PROBLEM}/{path}\n".encode() + _data(TEXT[kind].format(i=i)))
    return b"".join(parts)


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw + b"\n"


class FirstCall:
    """The engine's model, recording the usage litellm reports for each worker call."""

    def __init__(self, model) -> None:
        self.model = model
        self.prompt_tokens: list[int] = []

    def __getattr__(self, name: str):
        return getattr(self.model, name)  # output_limit, may_force_tools: the engine's Model protocol

    async def complete(self, messages: list[dict], tools: list[dict] | None = None, **options):
        reply = await self.model.complete(messages, tools=tools, **options)
        if tools:
            self.prompt_tokens.append(reply.usage.tokens_in)
        return reply


async def first_prompt_tokens(memory: Memory, folder: Path) -> tuple[int, int]:
    """One real episode on `memory` (a solve with budget 1); the prompt tokens of its first
    model call as the server reported them, and the episode's model calls."""
    from gitswarm.demo.brain import respond
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.run import solve
    from gitswarm.fakeserver import serve
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig

    async with serve(respond) as server:
        config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k", reply_timeout_s=30)
        model = FirstCall(LiteLLMModel(config))
        cfg = SolveConfig(problems=folder, run=memory.path, model=config.model, workers=1, verify=0, budget=1)
        await solve(cfg, load_set(folder), model, model)
    return model.prompt_tokens[0], len(model.prompt_tokens)


def measure(sizes: list[int]) -> list[dict]:
    """For each size: build the memory, run one episode, report tokens and times."""
    found = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            memory = build(Path(tmp), size)
            built = time.perf_counter() - start
            tokens, calls = anyio.run(first_prompt_tokens, memory, Path(tmp) / "set")
            found.append({"size": size, "tokens": tokens, "calls": calls, "build_s": built,
                          "episode_s": time.perf_counter() - start - built})
    return found


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    chosen = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "10,100,1000,10000").split(",")]
    print(json.dumps(measure(chosen)))
