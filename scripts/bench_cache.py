"""Prompt caching and honest cost, on a demo-size run over the fake providers; prints one table.

Each row is the whole demo set (4 problems, 4 workers, budget 40) solved by the real engine
through real litellm, the scripted model behind the fake server playing a provider that
enforces its documented rules and bills with its own published price table:

- the share of input tokens read from the provider's cache (target: at least 60% over the
  Anthropic fake), against the same run with cache breakpoints off, measured in this run;
- the cost gitswarm recorded in its ledger against the fake provider's bill (target: within 1%);
- what caching saved: the cost with it over the cost without it.

Usage: python scripts/bench_cache.py [--workers 4] [--budget 40]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from gitswarm.models.config import ReasoningEffort

RUNS: tuple[tuple[str, str, str, ReasoningEffort | None, bool], ...] = (
    # (label, personality, model, reasoning effort, cache breakpoints)
    ("anthropic, no cache breakpoints (baseline)", "anthropic", "anthropic/claude-sonnet-4-5", None, False),
    ("anthropic, cache breakpoints", "anthropic", "anthropic/claude-sonnet-4-5", None, True),
    ("anthropic, thinking (high), cache breakpoints", "anthropic", "anthropic/claude-sonnet-4-5", "high", True),
    ("openai reasoning (o4-mini, medium), automatic caching", "openai-reasoning", "openai/o4-mini", "medium", True),
)


async def one_run(personality: str, model: str, effort: ReasoningEffort | None, cache: bool, workers: int,
                  budget: int) -> dict:
    """One demo run over `personality`; the ledger's totals beside the fake's bill."""
    from gitswarm.demo.brain import respond
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
        async with serve(respond, personality=personality) as server:
            config = ModelConfig(model=model, api_base=server.url, api_key="k", reasoning_effort=effort,
                                 cache_prompts=cache, reply_timeout_s=60)
            client = LiteLLMModel(config)
            cfg = SolveConfig(problems=problems, run=run, model=model, workers=workers, budget=budget)
            started = time.monotonic()
            result = await solve(cfg, load_set(problems), client, client)
            wall = time.monotonic() - started
        totals = Ledger.load(Memory(run)).totals
    return {"stop": str(result.reason), "wall": wall, "calls": totals.calls, "tokens_in": totals.tokens_in,
            "cache_read": totals.cache_read, "cache_write": totals.cache_write, "reasoning": totals.reasoning,
            "recorded": totals.cost_usd, "bill": server.bill_usd(), "rejections": len(server.rejections)}


def rows(figures: dict[str, dict]) -> list[tuple[str, str, str, str]]:
    """(figure, measured, target, result) rows for the table."""
    out = []
    baseline = figures[RUNS[0][0]]
    for label, personality, *_ in RUNS:
        f = figures[label]
        share = f["cache_read"] / max(1, f["tokens_in"])
        target = ">= 0.60" if personality == "anthropic" and label != RUNS[0][0] else "-"
        verdict = ("PASS" if share >= 0.6 else "FAIL") if target != "-" else "-"
        name = (f"cache: {label}: share of {f['tokens_in']:,} input tokens read from cache "
                f"({f['calls']} calls, {f['rejections']} refused, {f['wall']:.1f} s)")
        out.append((name, f"{share:.3f}", target, verdict))
        drift = abs(f["recorded"] - f["bill"]) / max(f["bill"], 1e-12)
        out.append((f"  cost recorded USD {f['recorded']:.4f} against the fake's bill USD {f['bill']:.4f}",
                    f"{f['recorded'] / max(f['bill'], 1e-12):.4f}x", "within 1%", "PASS" if drift <= 0.01 else "FAIL"))
        if personality == "anthropic" and label != RUNS[0][0]:
            out.append((f"  cost with cache breakpoints / without (baseline USD {baseline['recorded']:.4f})",
                        f"{f['recorded'] / max(baseline['recorded'], 1e-12):.3f}x", "-", "-"))
    return out


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--workers", type=int, default=4)
    cli.add_argument("--budget", type=int, default=40)
    args = cli.parse_args()
    figures = {}
    for label, personality, model, effort, cache in RUNS:
        figures[label] = anyio.run(one_run, personality, model, effort, cache, args.workers, args.budget)
    table = rows(figures)
    width = max(len(r[0]) for r in table)
    print(f"{'figure':{width}}  {'measured':>10}  {'target':>10}  result")
    for name, measured, target, verdict in table:
        print(f"{name:{width}}  {measured:>10}  {target:>10}  {verdict}")


if __name__ == "__main__":
    main()
