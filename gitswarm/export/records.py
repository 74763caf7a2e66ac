"""One episode laid out for training: a chat record, or one record per model call.

`Dialogue` is an episode's conversation whichever record it came from: the lossless one
(`engine.conversation`: every request as sent, every reply as returned) or, for a run made
before it, the readable transcript (`transcripts`), which says so in `source` and lists what
it lacks in `missing`.

`chat_record` is the layout OpenAI's fine-tuning and Hugging Face's chat templates read:
`messages` (system, user, assistant with `tool_calls`, `tool` turns answering them by
`tool_call_id`) and `tools`. A text-protocol episode is the plain text it was: no
`tool_calls`, its calls in the assistant's text and their results in user turns, as the
model saw them; its `tools` is empty. The engine never answers the call that ends an
episode (`contribute`, `nominate`, `abstain`), so that answer is written here, saying so
(`labels.synthesized_answers` counts them). `check_chat` lists what breaks the layout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from gitswarm.export.transcripts import MISSING, read_messages

KEPT = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content")
"""The fields of a message the chat layout keeps (thinking blocks and provider fields stay in
the steps records)."""


@dataclass(frozen=True)
class Step:
    """One model call: what it was sent and what came back."""

    context: list[dict]
    reply: dict | None
    """The assistant message, None when the call failed."""
    raw: dict = field(default_factory=dict)
    """The call as the lossless record keeps it (reply with thinking, usage, times, error)."""
    protocol: str | None = None
    """native or text, as this call was made (a client may turn to text mid-episode)."""


@dataclass(frozen=True)
class Dialogue:
    """An episode's conversation, from whichever record the run has."""

    messages: list[dict]
    tools: list[dict]
    steps: list[Step]
    source: str
    """conversation (lossless), transcript (an old run's readable text) or none."""
    protocol: str | None = None
    """native or text; None when the record does not say."""
    params: dict = field(default_factory=dict)
    model: str | None = None
    offered: list[dict] = field(default_factory=list)
    """The tool schemas the native calls were sent (`tools` is the chat layout's: empty when the
    episode ended in the text protocol, though its first calls were native)."""

    @property
    def missing(self) -> list[str]:
        return list(MISSING) if self.source == "transcript" else []


def of_conversation(conversation: dict) -> Dialogue:
    """A lossless record (`engine.conversation.read_conversation`) as a Dialogue."""
    params = conversation.get("params") or {}
    steps = []
    for call in conversation.get("calls") or []:
        request = call.get("request") or {}
        protocol = request.get("protocol") or params.get("tool_protocol") or "native"
        reply = _reply_message(call["reply"], protocol == "text") if call.get("reply") else None
        steps.append(Step(list(request.get("messages") or []), reply, call, protocol))
    messages: list[dict] = []
    protocol = params.get("tool_protocol") or "native"
    for step in steps:
        if step.reply is not None:
            messages, protocol = [*step.context, step.reply], step.protocol
    offered = list(conversation.get("tools") or [])
    return Dialogue(messages, [] if protocol == "text" else offered, steps, "conversation", protocol, params,
                    conversation.get("model"), offered)


def _reply_message(reply: dict, text: bool) -> dict:
    """The assistant turn as the engine kept it: in the text protocol its text; else the calls
    the model made (`tool_calls`, arguments as sent) or, when it made none, those the engine
    read from its prose (`read_calls`, made native); the tool turns after it answer their ids."""
    message = {"role": "assistant", "content": reply.get("content") or ""}
    if reply.get("reasoning_content"):
        message["reasoning_content"] = reply["reasoning_content"]
    calls = reply.get("tool_calls") or reply.get("read_calls") or []
    if calls and not text:
        message["content"] = message["content"] or None
        message["tool_calls"] = [_call(c, n) for n, c in enumerate(calls)]
    return message


def _call(call: dict, n: int) -> dict:
    arguments = call.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"id": call.get("id") or f"call_{n}", "type": "function",
            "function": {"name": call.get("name") or "", "arguments": arguments}}


def of_transcript(text: str | None, tools: list[dict]) -> Dialogue:
    """An old run's readable transcript as a Dialogue (no transcript: an empty one)."""
    if not text:
        return Dialogue([], tools, [], "none")
    messages = read_messages(text, [t["function"]["name"] for t in tools])
    steps = [Step(messages[:i], m) for i, m in enumerate(messages) if m["role"] == "assistant"]
    return Dialogue(messages, tools, steps, "transcript", offered=tools)


def chat_record(dialogue: Dialogue, labels: dict) -> dict:
    """The episode as one chat fine-tuning record, with its labels."""
    messages, added = answered([_kept(m) for m in dialogue.messages], labels.get("outcome") or "ended")
    return {"messages": messages, "tools": dialogue.tools,
            "labels": labels | _source(dialogue) | {"synthesized_answers": added}}


def step_records(dialogue: Dialogue, labels: dict, rewards: list[float]) -> list[dict]:
    """One record per model call: the context it saw, the tools and other arguments it was sent
    with (`request`: enough to send it again as it was), its reply, its reward and return."""
    credit = labels.get("credit", 0.0)
    found = []
    for n, (step, reward) in enumerate(zip(dialogue.steps, rewards, strict=False), 1):
        raw = step.raw
        found.append({"episode": labels.get("episode"), "step": n, "steps": len(dialogue.steps),
                      "context": step.context, "tools": [] if step.protocol == "text" else dialogue.offered,
                      "protocol": step.protocol, "request": _arguments(raw), "reply": step.reply,
                      "raw_reply": raw.get("reply"), "usage": raw.get("usage"), "error": raw.get("error"),
                      "started": raw.get("started"), "ended": raw.get("ended"),
                      "reward": reward, "return": credit, "labels": labels | _source(dialogue)})
    return found


def _arguments(call: dict) -> dict:
    """The call's other `litellm.acompletion` arguments as sent (model, max_tokens, tool_choice,
    stream, ...): they change within an episode (a forced tool call after prose, a lower output
    limit a provider named), so the episode's `params` cannot stand in for them."""
    request = call.get("request") or {}
    return {k: v for k, v in request.items() if k not in ("messages", "kept", "protocol")}


def _source(dialogue: Dialogue) -> dict:
    return {"source": dialogue.source, "lossless": dialogue.source == "conversation",
            "missing": dialogue.missing, "protocol": dialogue.protocol, "params": dialogue.params,
            **({"model": dialogue.model} if dialogue.model else {})}


def _kept(message: dict) -> dict:
    kept = {k: message[k] for k in KEPT if k in message}
    content = kept.get("content")
    if isinstance(content, list):  # content parts (cache breakpoints): their text
        kept["content"] = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return kept


def answered(messages: list[dict], outcome: str) -> tuple[list[dict], int]:
    """The messages with an answer after each tool call left without one (the call that ended
    the episode); returns them and how many were added."""
    found: list[dict] = []
    added = 0
    open_calls: list[str] = []
    for message in messages:
        if message["role"] != "tool" and open_calls:
            found += [_ending(c, outcome) for c in open_calls]
            added, open_calls = added + len(open_calls), []
        if message["role"] == "assistant":
            open_calls = [c["id"] for c in message.get("tool_calls") or []]
        elif message["role"] == "tool" and message.get("tool_call_id") in open_calls:
            open_calls.remove(message["tool_call_id"])
        found.append(message)
    found += [_ending(c, outcome) for c in open_calls]
    return found, added + len(open_calls)


def _ending(call_id: str, outcome: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id,
            "content": f"(not part of the episode: this call ended it; outcome: {outcome})"}


def check_chat(record: dict) -> list[str]:
    """What breaks the chat layout in `record`: roles out of order, a tool call without its
    answer, an answer to no call, tool calls without tool schemas. Empty when it is valid."""
    problems: list[str] = []
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["no messages"]
    open_calls: list[str] = []
    before = None
    for n, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_calls:
                problems.append(f"message {n}: a tool turn answering no open call ({message.get('tool_call_id')!r})")
            else:
                open_calls.remove(message["tool_call_id"])
        else:
            if open_calls:
                problems.append(f"message {n}: {role} before the answers to {open_calls}")
                open_calls = []
            if not _follows(before, role, n):
                problems.append(f"message {n}: {role} after {before}")
        if role == "assistant" and message.get("tool_calls"):
            if not record.get("tools"):
                problems.append(f"message {n}: tool calls but no tools")
            open_calls = [c.get("id") for c in message["tool_calls"]]
            if len(set(open_calls)) != len(open_calls) or not all(open_calls):
                problems.append(f"message {n}: tool call ids missing or repeated")
        before = role
    if open_calls:
        problems.append(f"the last tool calls are not answered: {open_calls}")
    return problems


def _follows(before: str | None, role: str | None, n: int) -> bool:
    allowed = {None: {"system", "user"}, "system": {"user"}, "user": {"assistant", "user"},
               "assistant": {"user"}, "tool": {"user", "assistant"}}
    return role in allowed.get(before, set())
