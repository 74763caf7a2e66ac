"""A long episode in a bounded context (`engine.window`): input tokens per step with the context
policy on, against the same episode with it off, in one run; and the fake Anthropic provider's
cache share with the policy on.

One episode of `--steps` steps through the real engine and real litellm against the fake
server, the scripted model writing an 8 KB file at step 1, reading it back (8,000 characters of
tool output) at every step after, and contributing at the last; compactions are answered by
the scripted model in text. Printed, as one table:

- with the policy on: input tokens of every step from step 15 to the last, at most 2x step 15's;
- the episode's total input tokens, policy on over policy off;
- over the Anthropic personality (claude-sonnet-4-5, cache breakpoints on): the share of input
  tokens read from the cache with the policy on (target: at least 0.8).

Usage: python scripts/bench_window.py [--steps 100] [--kb 8]
"""

from __future__ import annotations

import argparse
import functools
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from gitswarm.fakeserver import FakeReply

PROBLEM = "demo-odd-sum"
STEP = re.compile(r"step (\d+) of (\d+)")


def responder(kb: int):
    """The scripted model of the long episode: stage a file of `kb` KB, read it each step, then
    contribute at the last step; a request without tools (a compaction) gets an account."""
    body = ("The sum of the first n odd numbers is n squared; checked for n up to 1000.\n" * 200)[:kb * 1000]

    def respond(request: dict) -> FakeReply:
        messages = request.get("messages", [])
        last = _text(messages[-1]) if messages else ""
        if "Reply with text only" in last:
            return FakeReply(content="Done: staged notes/odd.md and read it back each step; it holds the "
                                     "check for n up to 1000. Next: keep reading until the last step, then "
                                     "contribute the note.")
        steps = [STEP.search(_text(m)) for m in messages if m.get("role") == "user"]
        found = [s for s in steps if s]
        step, last_step = (int(found[-1].group(1)), int(found[-1].group(2))) if found else (1, 2)
        if step == 1:
            call = {"name": "write_file", "arguments": {"path": "notes/odd.md", "content": body}}
        elif step < last_step:
            call = {"name": "read_file", "arguments": {"path": "notes/odd.md"}}
        else:
            call = {"name": "contribute", "arguments": {"kind": "note", "title": "odd sums are squares",
                                                        "summary": "Checked up to 1000."}}
        return FakeReply(tool_calls=[call])

    return respond


def _text(message: dict) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


async def episode(steps: int, kb: int, trim: bool, personality: str = "openai",
                  model: str = "openai/gitswarm-scripted", **policy: Any) -> dict:
    """One episode of `steps` steps; its ledger record's figures."""
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.ledger import Ledger
    from gitswarm.engine.run import solve
    from gitswarm.fakeserver import serve
    from gitswarm.memory.repo import Memory
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.problems.loader import load_set
    from gitswarm.resources import resolve_set

    problems = resolve_set("demo")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        async with serve(responder(kb), personality=personality) as server:
            config = ModelConfig(model=model, api_base=server.url, api_key="k", reply_timeout_s=60,
                                 max_output_tokens=4096)
            client = LiteLLMModel(config)
            cfg = SolveConfig(problems=problems, run=run, model=model, workers=1, verify=0, budget=1, max_episodes=1,
                              problem_ids=(PROBLEM,), max_steps=steps, trim_context=trim, **policy)
            started = time.monotonic()
            await solve(cfg, load_set(problems), client, client)
            wall = time.monotonic() - started
        record = Ledger.load(Memory(run)).episodes["e00001"]
    return {"status": str(record.status), "calls_in": record.calls_in, "tokens_in": record.tokens_in,
            "cache_read": record.cache_read, "compactions": record.compactions, "stubbed": record.stubbed,
            "wall": wall}


def rows(on: dict, off: dict, cached: dict) -> list[tuple[str, str, str, str]]:
    """(figure, measured, target, result) rows."""
    steps = on["calls_in"]
    first, worst = steps[14], max(steps[14:])
    ratio = on["tokens_in"] / max(1, off["tokens_in"])
    share = cached["cache_read"] / max(1, cached["tokens_in"])
    return [
        (f"policy on: {len(steps)} calls ({on['compactions']} compactions, {on['stubbed']} stub batches), "
         f"{on['status']}; input tokens at step 15 {first:,}, at most {worst:,} after", f"{worst / first:.2f}x",
         "<= 2x", "PASS" if worst <= 2 * first else "FAIL"),
        (f"total input tokens, policy on {on['tokens_in']:,} / off {off['tokens_in']:,} "
         f"(off: {off['status']}, its last step {off['calls_in'][-1]:,})", f"{ratio:.3f}x", "-", "-"),
        (f"anthropic fake, policy on: share of {cached['tokens_in']:,} input tokens read from cache "
         f"({cached['compactions']} compactions)", f"{share:.3f}", ">= 0.80", "PASS" if share >= 0.8 else "FAIL"),
    ]


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--steps", type=int, default=100)
    cli.add_argument("--kb", type=int, default=8, help="KB of tool output per step")
    cli.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                     help="a setting of the policy other than its default, e.g. whole_share=0.1")
    args = cli.parse_args()
    policy: dict[str, Any] = {k: float(v) if "." in v else int(v) if v.isdigit() else v
              for k, v in (pair.split("=", 1) for pair in args.set)}
    on = anyio.run(functools.partial(episode, args.steps, args.kb, True, **policy))
    off = anyio.run(episode, args.steps, args.kb, False)
    cached = anyio.run(functools.partial(episode, args.steps, args.kb, True, "anthropic",
                                         "anthropic/claude-sonnet-4-5", **policy))
    table = rows(on, off, cached)
    width = max(len(r[0]) for r in table)
    print(f"{'figure':{width}}  {'measured':>9}  {'target':>8}  result")
    for name, measured, target, verdict in table:
        print(f"{name:{width}}  {measured:>9}  {target:>8}  {verdict}")
    print("input tokens per call, policy on: " + " ".join(str(n) for n in on["calls_in"]))


if __name__ == "__main__":
    main()
