"""The demo's scripted model behind the fake server, as a process of its own: for tests that
run the real CLI in several processes (a coordinator and workers) against one model server.
Prints the api_base on its first line, then serves until killed."""

from __future__ import annotations

import sys

import anyio

from gitswarm.demo.brain import respond
from gitswarm.fakeserver import FaultPlan, serve


async def main(latency_s: float) -> None:
    async with serve(respond, FaultPlan(latency_s=latency_s)) as server:
        print(server.url, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)
