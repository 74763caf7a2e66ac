"""What litellm's own settings do to its CPU cost per model call; prints one table.

One fake server (`gitswarm.fakeserver.serve`, a fixed reply with a tool call and usage) runs in
its own process on 127.0.0.1, so its CPU is not counted. Each setting is measured in a fresh
client process: `litellm_module()` as gitswarm configures it, then the setting on top, then N
calls at concurrency C through the real `LiteLLMModel`, streamed and not. The figure is the
client process's CPU time per call (`time.process_time`, all its threads: litellm runs part of
its bookkeeping in a thread pool), the median of `--repeat` runs taken in turn, and its ratio
against the default settings measured in the same run. The openai SDK's AsyncOpenAI alone
(same requests, same server) is the floor. Each run also checks that the replies still carry
usage and the tool call.

Usage: python scripts/bench_litellm.py [--calls 640] [--c 32] [--repeat 3] [--model openai/gpt-4o-mini]
       [--content-chars 0] [--only NAME,...] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

HERE = Path(__file__).resolve().parent
OPENAI_SDK = "openai SDK alone (AsyncOpenAI, no litellm): the floor"
QUIET = {"disable_streaming_logging": True, "logging": False, "disable_end_user_cost_tracking": True}
SETTINGS: dict[str, dict] = {
    # name: {"attrs": {litellm attribute: value}, "env": {variable: value}, "no_log": per-request
    # "no-log"}, each on top of litellm_module(). Callback lists are empty already (checked per run).
    "default (litellm_module() as gitswarm sets it)": {},
    "disable_streaming_logging = True": {"attrs": {"disable_streaming_logging": True}},
    "logging = False": {"attrs": {"logging": False}},
    "disable_end_user_cost_tracking = True": {"attrs": {"disable_end_user_cost_tracking": True}},
    "LITELLM_LOG=CRITICAL": {"env": {"LITELLM_LOG": "CRITICAL"}},
    "no-log = True on every request": {"no_log": True},
    "the five above together": {"attrs": QUIET, "env": {"LITELLM_LOG": "CRITICAL"}, "no_log": True},
    "turn_off_message_logging = True": {"attrs": {"turn_off_message_logging": True}},
    "disable_token_counter = True": {"attrs": {"disable_token_counter": True}},
    "safe_memory_mode = True": {"attrs": {"safe_memory_mode": True}},
    "disable_aiohttp_trust_env = True": {"attrs": {"disable_aiohttp_trust_env": True}},
    "disable_aiohttp_transport = True (httpx)": {"attrs": {"disable_aiohttp_transport": True}},
}
CALLBACK_LISTS = ("callbacks", "success_callback", "failure_callback", "input_callback", "service_callback",
                  "_async_success_callback", "_async_failure_callback", "_async_input_callback")
WARM_UP = 10
REPLY_TEXT = "Let me look at the note first."
REPLY_CALLS: list[dict] = [{"name": "read_file", "arguments": {"path": "problems/p001/notes/a.md"}}]


# --- the server ------------------------------------------------------------------------------

async def serve_fixed(port: int, content_chars: int) -> None:
    """The fake server answering every request with REPLY_TEXT and REPLY_CALLS (usage included), its text
    lengthened to `content_chars` (the fake streams text 16 characters a chunk)."""
    from gitswarm.fakeserver import FakeReply, serve

    text = REPLY_TEXT
    while len(text) < content_chars:  # varied words: litellm fails a stream that repeats one chunk
        text += f" step {len(text)} of the argument;"
    reply = FakeReply(content=text[:max(content_chars, len(REPLY_TEXT))], tool_calls=REPLY_CALLS)
    async with serve(lambda body: reply, port=port):
        await anyio.sleep_forever()


# --- one client process ----------------------------------------------------------------------

def request() -> tuple[list[dict], list[dict]]:
    """First-prompt-sized messages and the worker's tool schemas, as bench_orchestration's baseline."""
    from gitswarm.engine.tools import tool_schemas
    from gitswarm.resources import render

    messages = [{"role": "system", "content": render("worker_system.md.j2", max_steps=12, code=False,
                                                       verify=2, settle_nominations=3, in_row=False,
                                                       nominations=True, assigned=False, reviewer=False,
                                                       blind=False)},
                {"role": "user", "content": "Problem p001: what is 1 + 1? Give the number.\n" * 40}]
    return messages, tool_schemas()


async def through_litellm(setting: str, url: str, model: str, stream: bool, calls: int, c: int) -> dict:
    from gitswarm.models.client import LiteLLMModel
    from gitswarm.models.config import ModelConfig
    from gitswarm.models.lib import litellm_module

    litellm: Any = litellm_module()  # a module whose attributes this bench sets and replaces
    chosen = SETTINGS[setting]
    for name, value in chosen.get("attrs", {}).items():
        setattr(litellm, name, value)
    if chosen.get("no_log"):
        acompletion = litellm.acompletion

        async def logged_not(**kwargs):
            return await acompletion(**kwargs, **{"no-log": True})
        litellm.acompletion = logged_not
    client = LiteLLMModel(ModelConfig(model=model, api_base=url, api_key="k", reply_timeout_s=120, stream=stream))
    messages, tools = request()
    replies: list = []

    async def one() -> None:
        replies.append(await client.complete(messages, tools=tools))

    def check() -> dict:
        return {**_checked(replies), "callbacks": sum(len(getattr(litellm, n, ())) for n in CALLBACK_LISTS)}
    return await measured(one, calls, c, check)


def _checked(replies: list) -> dict:
    """What gitswarm reads off each reply is still there: usage, the tool call, its arguments."""
    usage = all(r.usage.tokens_in > 0 and r.usage.tokens_out > 0 for r in replies)
    calls = all(len(r.tool_calls) == 1 and r.tool_calls[0].name == "read_file"
                and r.tool_calls[0].arguments == REPLY_CALLS[0]["arguments"] for r in replies)
    priced = sum(r.usage.cost_usd is not None for r in replies)
    return {"usage_ok": usage, "tool_calls_ok": calls, "priced": priced, "replies": len(replies)}


async def through_openai(url: str, model: str, stream: bool, calls: int, c: int) -> dict:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
    plain_messages, plain_tools = request()  # openai's TypedDicts, as plain dicts
    messages = cast("list[ChatCompletionMessageParam]", plain_messages)
    tools = cast("list[ChatCompletionToolUnionParam]", plain_tools)
    name = model.split("/", 1)[-1]
    seen: list[tuple[int, int]] = []  # (usage present, tool calls)

    async def one() -> None:
        if not stream:
            r = await client.chat.completions.create(model=name, messages=messages, tools=tools, max_tokens=8192)
            seen.append((int(r.usage is not None), len(r.choices[0].message.tool_calls or [])))
            return
        response = await client.chat.completions.create(model=name, messages=messages, tools=tools, max_tokens=8192,
                                                        stream=True, stream_options={"include_usage": True})
        usage, ids = None, set[int]()
        async for chunk in response:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                ids.update(t.index for t in choice.delta.tool_calls or [])
        seen.append((int(usage is not None), len(ids)))

    def check() -> dict:
        return {"usage_ok": all(u for u, _ in seen), "tool_calls_ok": all(n == 1 for _, n in seen),
                "priced": 0, "replies": len(seen)}
    return await measured(one, calls, c, check)


async def measured(one, calls: int, c: int, check) -> dict:
    """Warm up, then `calls` calls from C tasks; CPU (the process's, and the event loop
    thread's alone) and wall per call."""
    for _ in range(WARM_UP):
        await one()

    async def worker(n: int) -> None:
        for _ in range(n):
            await one()

    if PROFILE:
        PROFILE.begin()
    t0, cpu0, main0 = time.perf_counter(), time.process_time(), time.thread_time()
    async with anyio.create_task_group() as tg:
        for i in range(c):
            tg.start_soon(worker, calls // c + (i < calls % c))
    wall, cpu, main = time.perf_counter() - t0, time.process_time() - cpu0, time.thread_time() - main0
    if PROFILE:
        PROFILE.end()
    return {"cpu_ms": cpu / calls * 1000, "main_ms": main / calls * 1000, "calls_per_s": calls / wall, **check()}


class Profiled:
    """cProfile in every thread (litellm works in its thread pools too), counting only the
    measured calls: thread profilers start with their thread and are cleared when the
    measurement begins, the event loop thread's starts then."""

    def __init__(self) -> None:
        import cProfile
        import threading

        self.main = cProfile.Profile()
        self.threads: list[cProfile.Profile] = []
        threading.setprofile(self._start)

    def _start(self, *_args) -> None:  # the first event in each new thread: profile it from here
        import cProfile

        sys.setprofile(None)
        self.threads.append(cProfile.Profile())
        self.threads[-1].enable()

    def begin(self) -> None:
        for p in self.threads:
            p.clear()
        self.main.enable()

    def end(self) -> None:
        self.main.disable()

    def report(self, calls: int, top: int = 45) -> None:
        """The functions of litellm, the openai SDK, the transports and gitswarm with the most
        cumulative time, in ms per call, all threads together."""
        import pstats
        import threading

        threading.setprofile(None)
        for p in self.threads:
            p.disable()
        stats = pstats.Stats(self.main)
        for p in self.threads:
            stats.add(p)
        rows = [(ct / calls * 1000, tt / calls * 1000, nc / calls, _where(path, line, fn))
                for (path, line, fn), (_, nc, tt, ct, _) in stats.stats.items()  # type: ignore[attr-defined]
                if any(k in path for k in ("litellm", "openai", "aiohttp", "httpx", "gitswarm"))]
        print(f"\nprofile, {len(self.threads) + 1} threads, ms per call (cProfile slows all of it about 2x: "
              "read the shares)", file=sys.stderr)
        print(f"{'cumulative':>10} {'own':>6} {'calls':>6}  function (calls: entries, a coroutine's resumptions "
              "included)", file=sys.stderr)
        for ct, tt, nc, name in sorted(rows, reverse=True)[:top]:
            print(f"{ct:10.3f} {tt:6.3f} {nc:6.1f}  {name}", file=sys.stderr)


PROFILE: Profiled | None = None


def _where(path: str, line: int, fn: str) -> str:
    return f"{Path(path).parent.name}/{Path(path).name}:{line} {fn}"


def client_main(args: argparse.Namespace) -> None:
    if args.setting == OPENAI_SDK:
        def run() -> dict:
            return anyio.run(through_openai, args.url, args.model, args.stream, args.calls, args.c)
    else:
        def run() -> dict:
            return anyio.run(through_litellm, args.setting, args.url, args.model, args.stream, args.calls, args.c)
    global PROFILE
    PROFILE = Profiled() if args.profile else None
    figures = run()
    if PROFILE:
        PROFILE.report(args.calls)
    print(json.dumps(figures))


# --- the parent: all settings, in turn -------------------------------------------------------

def run_client(setting: str, url: str, model: str, stream: bool, calls: int, c: int,
               profile: bool = False) -> dict:
    env = {**os.environ, **SETTINGS.get(setting, {}).get("env", {})}
    command = [sys.executable, __file__, "client", setting, url, model, "--calls", str(calls), "--c", str(c)]
    command += (["--stream"] if stream else []) + (["--profile"] if profile else [])
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode:
        raise RuntimeError(f"{setting}: {done.stderr[-2000:]}")
    if profile:
        print("\n".join(ln for ln in done.stderr.splitlines() if "Warning" not in ln))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_run(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    from bench_orchestration import free_port, wait_for_port

    names = [*SETTINGS, OPENAI_SDK]
    if args.only:
        wanted = args.only.split(",")
        names = [n for n in names if n == next(iter(SETTINGS)) or any(w in n for w in wanted)]
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "serve", str(port), str(args.content_chars)])
    results: dict[tuple[str, bool], list[dict]] = {}
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/v1"
        for round_ in range(args.repeat):  # settings in turn, so a noisy minute hits them all alike
            for stream in (True, False):
                for name in names:
                    figures = run_client(name, url, args.model, stream, args.calls, args.c)
                    results.setdefault((name, stream), []).append(figures)
                    print(f"  round {round_ + 1}, {'streamed' if stream else 'not streamed'}: {name}: "
                          f"{figures['cpu_ms']:.2f} ms", file=sys.stderr)
        print_table(names, results, args)
        if args.profile:
            print(f"\nOne streamed run of the default settings under cProfile, {args.calls} calls at C={args.c}:")
            run_client(names[0], url, args.model, True, args.calls, args.c, profile=True)
    finally:
        server.terminate()
        server.wait(timeout=10)


def print_table(names: list[str], results: dict, args: argparse.Namespace) -> None:
    def figure(name: str, stream: bool, key: str) -> float:
        return statistics.median(f[key] for f in results[(name, stream)])

    def cell(name: str, stream: bool) -> str:
        runs = results[(name, stream)]
        cpu, low, high = figure(name, stream, "cpu_ms"), min(f["cpu_ms"] for f in runs), max(f["cpu_ms"] for f in runs)
        ratio = cpu / figure(names[0], stream, "cpu_ms")
        return (f"{cpu:6.2f} ({low:5.2f}-{high:5.2f}) {ratio:6.3f}x {figure(name, stream, 'main_ms'):6.2f} "
                f"{figure(name, stream, 'calls_per_s'):6.0f}")

    def kept(name: str) -> str:
        runs = results[(name, True)] + results[(name, False)]
        lost = [k for k in ("usage_ok", "tool_calls_ok") if not all(f[k] for f in runs)]
        callbacks = max(f.get("callbacks", 0) for f in runs)
        return ("LOST " + ", ".join(lost) if lost else "ok") + (f", {callbacks} callbacks" if callbacks else "")

    chunks = max(args.content_chars, len(REPLY_TEXT)) // 16 + 1
    print(f"\nCPU ms per call of the client process: {args.calls} calls at C={args.c}, model {args.model}, "
          f"a streamed reply's text in about {chunks} chunks of 16 characters (and its tool call), "
          f"median (min-max) of {args.repeat} runs; x default: against the first row, same run; loop: the "
          "event loop thread's share (the rest is litellm's thread pools); calls/s: wall, noisy")
    width = max(len(n) for n in names)
    head = f"{'CPU ms (min-max)':>20} {'ratio':>7} {'loop':>6} {'call/s':>6}"
    print(f"{'':{width}}  {'streamed':^42}   {'not streamed':^42}")
    print(f"{'setting':{width}}  {head}   {head}   replies")
    for name in names:
        print(f"{name:{width}}  {cell(name, True)}   {cell(name, False)}   {kept(name)}")


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = cli.add_subparsers(dest="mode")
    s = sub.add_parser("serve")
    s.add_argument("port", type=int)
    s.add_argument("content_chars", type=int)
    k = sub.add_parser("client")
    k.add_argument("setting")
    k.add_argument("url")
    k.add_argument("model")
    k.add_argument("--stream", action="store_true")
    k.add_argument("--calls", type=int, default=640)
    k.add_argument("--c", type=int, default=32)
    k.add_argument("--profile", action="store_true")
    cli.add_argument("--calls", type=int, default=640)
    cli.add_argument("--c", type=int, default=32)
    cli.add_argument("--repeat", type=int, default=3)
    cli.add_argument("--model", default="openai/gpt-4o-mini")
    cli.add_argument("--content-chars", type=int, default=0,
                     help="lengthen the reply's text to this many characters (16 a streamed chunk)")
    cli.add_argument("--profile", action="store_true", help="then profile one streamed run of the default")
    cli.add_argument("--only", default="", help="comma-separated parts of setting names (the default is kept)")
    args = cli.parse_args()
    if args.mode == "serve":
        anyio.run(serve_fixed, args.port, args.content_chars)
    elif args.mode == "client":
        client_main(args)
    else:
        main_run(args)


if __name__ == "__main__":
    main()
