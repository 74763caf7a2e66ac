"""A model whose replies someone writes by hand: an OpenAI-compatible server on 127.0.0.1 that
queues each chat request as files in a folder and answers with the reply file written there.

For trying gitswarm with a capable model that has no API of its own here (a person, or an agent
session, reading the prompts and writing the tool calls), on the real litellm path:

    python scripts/relay.py --folder /tmp/relay --port 8400 &
    gitswarm solve problems/demo --model openai/relay --api-base http://127.0.0.1:8400/v1 ...

For request N the server writes `N.json` (the whole request as litellm sent it) and `N.md` (what
is new in it: the episode and step, the newest user turn and the tool results since the last
reply, so a reader follows each episode without reading it again whole), then waits for
`N.reply.json`: `{"content": "...", "tool_calls": [{"name": "...", "arguments": {...}}]}`
(either part may be left out). A reply file that is not valid JSON is answered with an error
the run sees as a server fault, and renamed `N.reply.bad` so it can be written again.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import anyio

from gitswarm.fakeserver import FakeError, FakeReply, serve

STATE = re.compile(r"episode: (\S+) · worker (\S+) · step (\d+)")


class Relay:
    def __init__(self, folder: Path, poll_s: float = 0.2) -> None:
        self.folder, self.poll_s, self.count = folder, poll_s, 0
        folder.mkdir(parents=True, exist_ok=True)

    async def __call__(self, request: dict) -> FakeReply | FakeError:
        self.count += 1
        n = self.count
        (self.folder / f"{n}.json").write_text(json.dumps(request, indent=1, ensure_ascii=False))
        (self.folder / f"{n}.md").write_text(new_part(request))
        answer = self.folder / f"{n}.reply.json"
        while True:
            if answer.exists():
                try:
                    data = json.loads(answer.read_text())
                except ValueError as exc:
                    answer.rename(answer.with_suffix(".bad"))
                    return FakeError(500, f"relay: reply {n} is not JSON: {exc}", "server_error")
                return FakeReply(content=data.get("content", ""), tool_calls=data.get("tool_calls") or [])
            await anyio.sleep(self.poll_s)


def new_part(request: dict) -> str:
    """What a reader needs to answer: which episode and step, then the messages after the last
    assistant turn (the first request of an episode: its system prompt and first prompt)."""
    messages = request.get("messages", [])
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    text = "\n".join(_text(m) for m in messages)
    found = STATE.findall(text)
    head = f"# episode {found[-1][0]} · worker {found[-1][1]} · step {found[-1][2]}\n" if found else "# (no state)\n"
    tools = ", ".join(t["function"]["name"] for t in request.get("tools") or [])
    parts = [head, f"tools: {tools or 'none (a merger or judge call: reply with content)'}\n"]
    for m in messages[last + 1:]:
        parts.append(f"\n## {m.get('role')}{' (' + m['tool_call_id'] + ')' if m.get('tool_call_id') else ''}\n")
        parts.append(_text(m))
    return "\n".join(parts) + "\n"


def _text(message: dict) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


async def main(folder: Path, port: int) -> None:
    async with serve(Relay(folder), port=port) as server:
        print(server.url, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--folder", type=Path, required=True)
    cli.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    args = cli.parse_args()
    anyio.run(main, args.folder, args.port)
