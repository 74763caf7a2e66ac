"""An old run's episode, read back from its readable transcript (`engine.episode.transcript`).

A run made before the lossless record (`engine.conversation`) kept only that text: each turn
as `### <role>`, an assistant's thinking between `<thinking>` tags, its text, then one line
`-> name(arguments)` per tool call. What it never held is not invented: tool call ids are
made up (`call_<turn>_<n>`, each tool turn answering the calls of the assistant turn before
it in order), and the request's parameters, usage and time of each call, thinking
signatures and whitespace at the ends of turns are gone (`MISSING`).
"""

from __future__ import annotations

import re

ROLES = ("system", "user", "assistant", "tool")
_TURN = re.compile(r"\n\n### (system|user|assistant|tool)(?=\n|$)")
_THINKING = re.compile(r"\A<thinking>\n(.*?)\n</thinking>\n", re.S)
MISSING = ("tool call ids", "request parameters", "tool protocol", "thinking signatures", "usage per call",
           "time of each call", "whitespace at the ends of turns")
"""What a readable transcript does not keep."""
FINAL_TOOLS = ("contribute", "nominate", "abstain")
"""The tools that end an episode: the engine answers the calls after them, never them."""


def read_messages(text: str, tool_names: list[str]) -> list[dict]:
    """The conversation a transcript shows, as chat messages; `tool_names` are the tools the
    episode was offered (a line `-> name(` of another name is text)."""
    parts = _TURN.split("\n\n" + text.rstrip("\n"))
    messages: list[dict] = []
    for role, body in zip(parts[1::2], parts[2::2], strict=True):
        body = body.removeprefix("\n")
        if role == "assistant":
            messages.append(_assistant(body, tool_names, len(messages)))
        else:
            messages.append({"role": role, "content": body})
    return _paired(messages)


def _assistant(body: str, tool_names: list[str], turn: int) -> dict:
    message: dict = {"role": "assistant"}
    thought = _THINKING.match(body)
    if thought:
        message["reasoning_content"] = thought.group(1)
        body = body[thought.end():]
    names = "|".join(re.escape(n) for n in sorted(tool_names, key=len, reverse=True)) or r"(?!)"
    first = re.search(rf"(?:\A|\n)-> (?:{names})\(", body)
    if first is None:
        return message | {"content": body}
    text, shown = body[:first.start()], body[first.start():].lstrip("\n")
    calls = []
    for n, chunk in enumerate(re.split(rf"\n(?=-> (?:{names})\()", shown)):
        name, _, arguments = chunk[3:].partition("(")
        calls.append({"id": f"call_{turn}_{n}", "type": "function",
                      "function": {"name": name, "arguments": arguments.removesuffix(")")}})
    return message | {"content": text or None, "tool_calls": calls}


def _paired(messages: list[dict]) -> list[dict]:
    """Give each tool turn the id of the call it answers: the calls of the assistant turn before
    it, in order, leaving out the final action (the engine answers the calls after it only)."""
    waiting: list[str] = []
    for message in messages:
        if message["role"] == "assistant":
            waiting = [c["id"] for c in message.get("tool_calls", [])]
            answers = _answers_after(messages, message)
            if answers < len(waiting):
                final = next((i for i, c in enumerate(message["tool_calls"])
                              if c["function"]["name"] in FINAL_TOOLS), None)
                if final is not None and answers == len(waiting) - 1:
                    waiting.pop(final)
        elif message["role"] == "tool":
            message["tool_call_id"] = waiting.pop(0) if waiting else ""
    return messages


def _answers_after(messages: list[dict], assistant: dict) -> int:
    start = next(i for i, m in enumerate(messages) if m is assistant) + 1
    count = 0
    for message in messages[start:]:
        if message["role"] != "tool":
            break
        count += 1
    return count
