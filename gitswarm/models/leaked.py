"""Tool calls a model wrote into its reply's text instead of making them, as small local models
do behind OpenAI-compatible servers whose chat template does not turn them into native calls.

The formats found, each named in `ToolCall.leaked`:

- `json`: a bare `{"name": TOOL, "arguments": {...}}` in the prose ("parameters" for
  "arguments", OpenAI's `{"type": "function", "function": {...}}` shape, or a list of them);
- `tool_call_tag`: Hermes and Qwen's `<tool_call>{...}</tool_call>`;
- `function_tag`: Llama 3.x's `<function=TOOL>{...}</function>`;
- `mistral`: `[TOOL_CALLS][{...}, ...]`, or `[TOOL_CALLS]TOOL[ARGS]{...}`;
- `fence`: such JSON alone in a code fence.

Only calls to the request's tools count: JSON naming no known tool is prose. A closing tag
the server swallowed (its stop token) is not needed; a leading `<think>` block is not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from gitswarm.models.arguments import ArgumentsError, eaten_tex, parse_arguments
from gitswarm.models.reply import ToolCall

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_FUNCTION = re.compile(r"<function=([\w.-]+)>\s*(.*?)\s*(?:</function>|(?=<function=)|\Z)", re.DOTALL)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*")
_MISTRAL_ARGS = re.compile(r"([\w.-]+)\s*\[ARGS\]\s*")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[\w+-]*[ \t]*\n(.*?)\n[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})
_WRAPPER_KEYS = frozenset({"function", "type", "id"})
_JSON_START = re.compile(r"\{\s*\"|\[\s*\{\s*\"")
"""Where a call object (or a list of them) may open; a TeX brace does not look like this."""
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]"]|[^,:\s0-9+\-.eEtruefalsn"{}\[\]]', re.DOTALL)
"""What matters in reading JSON's brackets: a whole string, a bracket, a quote that opens no
whole string, or a character no JSON holds outside strings (numbers, true, false, null and
separators skipped)."""
_MAX_DEPTH = 16
"""Deeper than any call's arguments: brackets nested further are not a call."""


_Call = tuple[str, object, str | None]
"""A call as found: the tool's name, its arguments as written (an object, or JSON text), and
why the call could not be read, if it could not."""


@dataclass(frozen=True)
class _Found:
    """A stretch of the text holding calls: where it is, its format, and its calls."""

    start: int
    end: int
    format: str
    calls: list[_Call]


def find(content: str, tools: list[dict], new_id: Callable[[int], str]) -> tuple[list[ToolCall], str]:
    """The calls to `tools` leaked into `content`, in order (ids from `new_id(n)`, n from 1), and
    the prose left once they are taken out."""
    names = {tool.get("function", tool).get("name") for tool in tools}
    offset = _after_thinking(content)
    body = content[offset:]
    found = sorted(_spans(body, names), key=lambda f: f.start)
    if not found:
        return [], content.strip()
    found_calls = [(f.format, call) for f in found for call in f.calls]
    calls = [_tool_call(new_id(n), call, fmt) for n, (fmt, call) in enumerate(found_calls, 1)]
    kept, at = [content[:offset]], 0
    for f in found:
        kept.append(body[at:f.start])
        at = f.end
    kept.append(body[at:])
    return calls, re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", "".join(kept)).strip()


def _after_thinking(text: str) -> int:
    """Where the text after a leading reasoning block starts (its opening tag the server may
    have cut); 0 without one."""
    head, sep, _ = text.partition("</think>")
    if sep and (head.lstrip().startswith("<think>") or "<think>" not in head):
        return len(head) + len(sep)
    return len(text) if text.lstrip().startswith("<think>") else 0  # cut while thinking: all of it is


def _spans(text: str, names: set[str]) -> list[_Found]:
    """Every stretch of calls, none overlapping another: the tagged formats first, then fences,
    then bare JSON."""
    taken: list[_Found] = []
    for found in (*_tagged(text, names), *_fenced(text, names), *_bare(text, names)):
        if not any(found.start < f.end and f.start < found.end for f in taken):
            taken.append(found)
    return taken


def _fenced(text: str, names: set[str]) -> Iterator[_Found]:
    for fence in _FENCE.finditer(text):
        calls = _calls_in(fence[2].strip(), names)
        if calls:
            yield _Found(fence.start(), fence.end(), "fence", calls)


def _tagged(text: str, names: set[str]) -> Iterator[_Found]:
    for match in _TOOL_CALL.finditer(text):
        calls = _calls_in(match[1], names) or _broken(match[1], names)
        if calls:
            yield _Found(match.start(), match.end(), "tool_call_tag", calls)
    for match in _FUNCTION.finditer(text):
        if match[1] in names:
            yield _Found(match.start(), match.end(), "function_tag", [(match[1], match[2] or "{}", None)])
    for match in _MISTRAL.finditer(text):
        found = _mistral(text, match.end(), names)
        if found is not None:
            end, calls = found
            yield _Found(match.start(), end, "mistral", calls)


def _mistral(text: str, start: int, names: set[str]) -> tuple[int, list[_Call]] | None:
    """The calls after a `[TOOL_CALLS]` marker at `start`: a JSON list, or TOOL[ARGS]{...}."""
    named = _MISTRAL_ARGS.match(text, start)
    if named:
        end = _balanced_end(text, named.end()) or len(text)
        return (end, [(named[1], text[named.end():end], None)]) if named[1] in names else None
    end = _balanced_end(text, start) or len(text)
    calls = _calls_in(text[start:end], names) or _broken(text[start:end], names)
    return (end, calls) if calls else None


def _bare(text: str, names: set[str]) -> Iterator[_Found]:
    """JSON objects (or lists of them) in prose that are calls to known tools."""
    i = 0
    while (opening := _JSON_START.search(text, i)) is not None:
        i = opening.start()
        end = _balanced_end(text, i)
        calls = _calls_in(text[i:end], names) if end else []
        if calls:
            yield _Found(i, end, "json", calls)  # type: ignore[arg-type]
        i = end if end and (calls or text[i] == "{") else i + 1


def _balanced_end(text: str, start: int) -> int | None:
    """Where the JSON value opening at `start` ends (just past its closing bracket); None when
    it does not open there, never closes, or meets what no JSON holds outside strings (prose),
    so that text full of braces is read in linear time."""
    if start >= len(text) or text[start] not in "{[":
        return None
    depth = 0
    for token in _TOKEN.finditer(text, start):
        char = token[0][0]
        if char in "{[":
            depth += 1
            if depth > _MAX_DEPTH:
                return None
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return token.end()
        elif char != '"' or len(token[0]) == 1:  # prose, or a string that never ends
            return None
    return None


def _calls_in(text: str, names: set[str]) -> list[_Call]:
    """The calls a JSON text holds: one call object, or a list of them, every one to a known tool."""
    value = _load(text)
    items = value if isinstance(value, list) else [value]
    calls = [_call_of(item) for item in items]
    if not items or any(call is None or call[0] not in names for call in calls):
        return []
    return calls  # type: ignore[return-value]


def _broken(text: str, names: set[str]) -> list[_Call]:
    """A tagged call to a known tool that cannot be read: the model hears what went wrong."""
    named = _NAME.search(text)
    if named is None or named[1] not in names:
        return []
    why = "it is not valid JSON" if _load(text) is None else 'it is not {"name": ..., "arguments": {...}}'
    shown = text if len(text) <= 120 else text[:117] + "..."
    return [(named[1], {}, f"the call written as text ({shown!r}) could not be read: {why}; make the call again")]


def _load(text: str) -> object:
    """JSON read leniently (raw control characters in strings, trailing commas); None when it is not."""
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            return json.loads(attempt, strict=False)
        except json.JSONDecodeError:
            continue
    return None


def _call_of(value: object) -> _Call | None:
    """The call when the value is a call object (OpenAI's `{"type": "function", "function": {...}}`
    too), else None."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict) and value.keys() <= _WRAPPER_KEYS:
        value = value["function"]
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value.keys() <= _CALL_KEYS:
        return None
    arguments = value.get("arguments", value.get("parameters"))
    return value["name"], {} if arguments is None else arguments, None


def _tool_call(call_id: str, call: _Call, fmt: str) -> ToolCall:
    """A leaked call, its arguments read as `parse_arguments` reads JSON text, or taken as the
    object they already are (checked for TeX eaten by JSON escapes all the same)."""
    name, arguments, problem = call
    if problem is not None:
        return ToolCall(call_id, name, None, "{}", problem, leaked=fmt)
    if isinstance(arguments, str):
        try:
            return ToolCall(call_id, name, parse_arguments(arguments), arguments, leaked=fmt)
        except ArgumentsError as exc:
            return ToolCall(call_id, name, None, arguments, str(exc), leaked=fmt)
    raw = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, dict):
        error = f"the arguments are a JSON {type(arguments).__name__}, not an object"
        return ToolCall(call_id, name, None, raw, error, leaked=fmt)
    eaten = eaten_tex(arguments)
    return ToolCall(call_id, name, None if eaten else arguments, raw, eaten, leaked=fmt)
