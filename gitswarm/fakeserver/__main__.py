"""Run the fake server by hand: `python -m gitswarm.fakeserver --port 8000 --script replies.json`.

The script is a JSON list; each item is a reply (`{"content": ..., "tool_calls": [...]}`) or
an error (`{"status": 429, "message": ...}`). Without a script the server echoes. `--demo`
serves the scripted model of `gitswarm demo` instead (model "openai/gitswarm-scripted"), so a
run on many machines can be tried offline: give its URL to `solve` and `worker` as --api-base.

`--personality` picks the provider it plays. The URL it prints is the api_base to give
litellm: `http://127.0.0.1:PORT/v1` for the OpenAI-shaped ones (model "openai/<name>"), and
`http://127.0.0.1:PORT` for `anthropic` (model "anthropic/<name>"; litellm adds /v1/messages).
`--tokens-per-s` makes the fake model write at that speed; `llama-cpp` plays llama-cpp-python's
server, which cuts a stream when another request comes unless `--no-interrupt-requests`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

import anyio

from gitswarm.fakeserver import FAULTS, PERSONALITIES, FakeError, FakeReply, FaultPlan, ScriptedResponder, serve
from gitswarm.fakeserver.llamacpp import CHAT_FORMATS
from gitswarm.fakeserver.responders import Responder, echo_responder


def load_script(path: Path) -> ScriptedResponder:
    """A scripted responder from a JSON file of replies and errors."""
    items = json.loads(path.read_text())
    return ScriptedResponder(FakeError(**item) if "status" in item else FakeReply(**item) for item in items)


DEMO_MODEL = "openai/gitswarm-scripted"
"""The model to name with `--demo` (any model the personality accepts is answered alike)."""


def responder_of(args: argparse.Namespace) -> Responder:
    """The demo's scripted model, a script's replies, or the echo."""
    if args.demo:
        from gitswarm.demo.brain import respond

        return respond
    return load_script(args.script) if args.script else echo_responder


async def main(args: argparse.Namespace) -> None:
    responder = responder_of(args)
    plan = FaultPlan(latency_s=args.latency, rate=args.fault_rate, kinds=tuple(args.fault), seed=args.seed)
    limits = dict(args.output_limit)
    async with serve(responder, plan, port=args.port, personality=args.personality, output_limits=limits,
                     api_key=args.api_key, tokens_per_s=args.tokens_per_s,
                     interrupt_requests=args.interrupt_requests, chat_format=args.chat_format) as server:
        print(f"fake {args.personality} server at {server.url} (Ctrl-C stops it)", flush=True)
        if args.demo:
            print(f"the demo's scripted model: give --model {DEMO_MODEL} --api-base {server.url}", flush=True)
        await anyio.sleep_forever()


def parser() -> argparse.ArgumentParser:
    """The command line of the standalone server."""
    cli = argparse.ArgumentParser(prog="python -m gitswarm.fakeserver", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port)")
    source = cli.add_mutually_exclusive_group()
    source.add_argument("--script", type=Path, help="JSON list of replies to replay in order")
    source.add_argument("--demo", action="store_true",
                        help=f"serve the scripted model of `gitswarm demo` (model {DEMO_MODEL}): problems/demo "
                             "offline, on one machine or many")
    cli.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    cli.add_argument("--fault-rate", type=float, default=0.0, help="probability of a fault per request")
    cli.add_argument("--fault", action="append", choices=sorted(FAULTS), default=[],
                     help="a fault to draw (repeatable; default: rate_limit and server_error)")
    cli.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    cli.add_argument("--personality", choices=sorted(PERSONALITIES), default="openai",
                     help="the provider to play, with its rules and error shapes (default: openai)")
    cli.add_argument("--output-limit", type=_limit, action="append", default=[], metavar="MODEL=TOKENS",
                     help="a model's output limit (repeatable), over the personality's own table")
    cli.add_argument("--api-key", help="the only API key accepted (anthropic, llama-cpp; default: any key)")
    cli.add_argument("--tokens-per-s", type=float, help="how fast the fake model writes (default: at once)")
    cli.add_argument("--no-interrupt-requests", dest="interrupt_requests", action="store_false",
                     help="llama-cpp: let a stream finish when another request comes (default: cut it)")
    cli.add_argument("--chat-format", choices=CHAT_FORMATS, default=CHAT_FORMATS[0],
                     help="llama-cpp: the chat format whose tool handling is played")
    return cli


def _limit(text: str) -> tuple[str, int]:
    model, _, tokens = text.partition("=")
    if not model or not tokens.isdigit():
        raise argparse.ArgumentTypeError(f"expected MODEL=TOKENS, got {text!r}")
    return model, int(tokens)


if __name__ == "__main__":
    arguments = parser().parse_args()
    arguments.fault = arguments.fault or ["rate_limit", "server_error"]
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main, arguments)
