"""Tool calls as plain text, for models without function calling.

The model reads `instructions(tools)` (rendered from prompts/text_protocol.md.j2) and writes

    <call name="write_file">
    <path>attempts/p1.md</path>
    <content>
    raw text: \\frac{1}{2}, "quotes", any line at all
    </content>
    </call>

- A call is the lines from `<call name="TOOL">` to `</call>` (`<call name="TOOL"/>` for no
  arguments); several may follow each other. Text outside calls is prose; code fences around
  calls and a leading `<think>...</think>` block (its opening tag perhaps cut) are skipped.
- An argument is `<NAME>value</NAME>` on one line (stripped), or a raw multi-line value: the
  lines after a line `<NAME>` up to the first line that is exactly `</NAME>` (surrounding
  whitespace aside; failing that, the first line ending with it). No escaping, no quoting.
  `<NAME until="WORD">` ends the value at a line that is exactly WORD instead (heredoc
  style), for a value holding a line `</NAME>` itself.
- Values are typed from the tool's JSON schema: integer, number, boolean, array (one item
  per line, or a JSON array); anything else is a string.
- A reply entirely in CRLF is read as LF; in an LF reply, a CR is part of the value.
- An unknown tool or argument, a missing required argument, a value of the wrong type, an
  unterminated value or call, or stray text in a call gives a ToolCall with `error` saying
  what to fix; the call is not run.

In a conversation rewritten by `to_text_messages`, results come back in one user message
per turn, each as `<result call="N" tool="TOOL">...</result>`, N counting the turn's calls.
"""

from __future__ import annotations

import contextlib
import json

from gitswarm.models import leaked
from gitswarm.models.textparse import BULLET, parse_reply, schema_kind
from gitswarm.resources import render

__all__ = ["format_calls", "instructions", "parse_reply", "text_call_id", "to_text_messages"]

_TYPES = {"string": "text", "integer": "integer", "number": "number", "boolean": "true or false"}


def instructions(tools: list[dict]) -> str:
    """The protocol's documentation for the model, listing every tool with its arguments."""
    return render("text_protocol.md.j2", tools=[_describe(tool) for tool in tools])


def _describe(tool: dict) -> dict:
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    required = set(params.get("required") or [])
    return {"name": fn["name"], "description": (fn.get("description") or "").strip(),
            "params": [{"name": key, "type": _type_text(spec), "required": key in required,
                        "enum": spec.get("enum"), "description": (spec.get("description") or "").rstrip(".")}
                       for key, spec in (params.get("properties") or {}).items()]}


def _type_text(spec: dict) -> str:
    kind = schema_kind(spec)
    if kind == "array":
        return f"list of {_type_text(spec.get('items') or {})} items, one per line"
    return _TYPES.get(kind, "text")


def to_text_messages(messages: list[dict], tools: list[dict]) -> list[dict]:
    """The conversation for a model without tools: native calls written in the protocol (a turn
    kept as protocol text stays as it is), results as user messages labelled by call, the
    instructions in the system message, and only system/user/assistant roles, alternating
    (consecutive same-role messages merged)."""
    out: list[dict] = []
    labels: dict[str, str] = {}
    for message in messages:
        role, text = message["role"], _text(message.get("content"))
        if role == "assistant":
            calls = [_pair(c) for c in message.get("tool_calls") or []]
            text = "\n\n".join(part for part in (text, format_calls([c[1:] for c in calls])) if part)
            labels = _labels(calls, text, tools)
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            label = labels.get(call_id, f'call="{call_id}" tool="{message.get("name", "?")}"')
            role, text = "user", f"<result {label}>\n{text}\n</result>"
        elif role == "system" and any(m["role"] != "system" for m in out):
            role = "user"
        _append(out, role, text)
    if not out or out[0]["role"] != "system":
        out.insert(0, {"role": "system", "content": ""})
    out[0]["content"] = "\n\n".join(part for part in (out[0]["content"], instructions(tools)) if part)
    return out


def _labels(calls: list[tuple[str, str, dict]], text: str, tools: list[dict]) -> dict[str, str]:
    """Each call's result label by call id; a turn kept as protocol text is parsed for its calls
    (or, failing those, for the calls it wrote in another format, as the client read them)."""
    found = parse_reply(text, tools)[1] if not calls else []
    if not calls and not found:
        found = leaked.find(text, tools, text_call_id)[0]
    named = [(cid, name) for cid, name, _ in calls] or [(c.id, c.name) for c in found]
    return {cid: f'call="{n}" tool="{name}"' for n, (cid, name) in enumerate(named, 1)}


def text_call_id(n: int) -> str:
    """The id of a reply's call number `n` (from 1) in the text protocol, as `parse_reply` names it."""
    return f"text_call_{n}"


def _append(out: list[dict], role: str, text: str) -> None:
    if out and out[-1]["role"] == role:
        out[-1]["content"] = f"{out[-1]['content']}\n\n{text}" if out[-1]["content"] else text
    else:
        out.append({"role": role, "content": text})


def _text(content: object) -> str:
    if isinstance(content, list):  # content parts, e.g. with cache_control marks
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _pair(call: dict) -> tuple[str, str, dict]:
    """A native call's id, name and arguments; arguments that are not a JSON object are left out."""
    arguments = call["function"].get("arguments") or "{}"
    with contextlib.suppress(json.JSONDecodeError):
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    return call.get("id", ""), call["function"]["name"], arguments if isinstance(arguments, dict) else {}


def format_calls(calls: list[tuple[str, dict]]) -> str:
    """Calls written in the protocol, as a model should write them."""
    return "\n\n".join("\n".join([f'<call name="{name}">', *(_format_value(k, v) for k, v in args.items()),
                                  "</call>"]) for name, args in calls)


def _format_value(key: str, value: object) -> str:
    if isinstance(value, list):
        text = _format_list(value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if "\n" not in text and text == text.strip():
        return f"<{key}>{text}</{key}>"
    lines, closer = text.split("\n"), f"</{key}>"
    if all(line.strip() != closer for line in lines):
        return f"<{key}>\n{text}\n{closer}"
    word, n = f"END-{key.upper()}", 1
    while any(line.strip() == word for line in lines):
        word, n = f"END-{key.upper()}-{n}", n + 1
    return f'<{key} until="{word}">\n{text}\n{word}'


def _format_list(items: list) -> str:
    plain = all(isinstance(i, str) and i and i == i.strip() and "\n" not in i and not i.startswith("[")
                and not BULLET.match(i) and not i.startswith("</") for i in items)
    return "\n".join(items) if items and plain else json.dumps(items, ensure_ascii=False)
