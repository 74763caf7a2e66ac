"""Run the fake server by hand: `python -m gitswarm.fakeserver --port 8000 --script replies.json`.

The script is a JSON list; each item is a reply (`{"content": ..., "tool_calls": [...]}`) or
an error (`{"status": 429, "message": ...}`). Without a script the server echoes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

import anyio

from gitswarm.fakeserver import FAULTS, FakeError, FakeReply, FaultPlan, ScriptedResponder, serve
from gitswarm.fakeserver.responders import Responder, echo_responder


def load_script(path: Path) -> ScriptedResponder:
    """A scripted responder from a JSON file of replies and errors."""
    items = json.loads(path.read_text())
    return ScriptedResponder(FakeError(**item) if "status" in item else FakeReply(**item) for item in items)


async def main(args: argparse.Namespace) -> None:
    responder: Responder = load_script(args.script) if args.script else echo_responder
    plan = FaultPlan(latency_s=args.latency, rate=args.fault_rate, kinds=tuple(args.fault), seed=args.seed)
    async with serve(responder, plan, port=args.port) as server:
        print(f"fake OpenAI-compatible server at {server.url} (Ctrl-C stops it)", flush=True)
        await anyio.sleep_forever()


def parser() -> argparse.ArgumentParser:
    """The command line of the standalone server."""
    cli = argparse.ArgumentParser(prog="python -m gitswarm.fakeserver", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port)")
    cli.add_argument("--script", type=Path, help="JSON list of replies to replay in order")
    cli.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    cli.add_argument("--fault-rate", type=float, default=0.0, help="probability of a fault per request")
    cli.add_argument("--fault", action="append", choices=sorted(FAULTS), default=[],
                     help="a fault to draw (repeatable; default: rate_limit and server_error)")
    cli.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    return cli


if __name__ == "__main__":
    arguments = parser().parse_args()
    arguments.fault = arguments.fault or ["rate_limit", "server_error"]
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main, arguments)
