"""Reading the text protocol: a reply's tool calls, written as `<call name="...">` blocks
with raw bodies, parsed and typed from the tools' schemas (the protocol itself is documented
in `gitswarm.models.textproto`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when used, so that the client may import this module
    from gitswarm.models.client import ToolCall

_CALL = re.compile(r"""^\s*<call\s+(?:name|tool)\s*=\s*["']?([^"'\s/>]+)["']?\s*(/?)>\s*(</call>)?\s*$""")
_ARG = re.compile(r"""^\s*<([A-Za-z_][\w.-]*)(?:\s+until\s*=\s*["']([^"'\s]+)["'])?\s*>(.*)$""")
_FENCE = re.compile(r"^\s*(```|~~~)[\w+-]*\s*$")
BULLET = re.compile(r"^[-*]\s+")
_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass
class _Block:
    """One call as written: its tool name and raw values, and the first mistake in it."""

    name: str
    values: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    last_long: str | None = None

    def fail(self, message: str) -> None:
        self.error = self.error or message


class _ArgError(Exception):
    """A value that does not fit its schema type."""


def parse_reply(content: str, tools: list[dict]) -> tuple[str, list[ToolCall]]:
    """The prose outside calls, and the reply's calls in order (ids `text_call_<n>`, from 1);
    a call with a mistake has `error` set saying what to fix, and `arguments` None."""
    if "\n" in content and content.count("\r\n") == content.count("\n"):
        content = content.replace("\r\n", "\n")
    thinking, content = _split_thinking(content)
    lines, i = content.split("\n"), 0
    items: list[str | _Block] = []
    while i < len(lines):
        match = _CALL.match(lines[i])
        if match:
            block, i = _read_call(lines, i, match)
            items.append(block)
        else:
            items.append(lines[i])
            i += 1
    functions = {fn["name"]: fn for fn in (tool.get("function", tool) for tool in tools)}
    blocks = [item for item in items if isinstance(item, _Block)]
    calls = [_to_call(block, n, functions) for n, block in enumerate(blocks, 1)]
    return "\n\n".join(p for p in (thinking, _prose(items)) if p), calls


def _split_thinking(text: str) -> tuple[str, str]:
    """A leading reasoning block (whose opening tag the server may have cut) and the rest."""
    head, sep, tail = text.partition("</think>")
    if sep and (head.lstrip().startswith("<think>") or "<think>" not in head):
        return (head + sep).strip(), tail
    return "", text


def _read_call(lines: list[str], i: int, match: re.Match) -> tuple[_Block, int]:
    block = _Block(match[1])
    if match[2] or match[3]:
        return block, i + 1
    i += 1
    while i < len(lines) and not _CALL.match(lines[i]):
        line = lines[i]
        if line.strip() == "</call>":
            return block, i + 1
        arg = _ARG.match(line)
        if arg:
            i = _read_value(lines, i, arg, block)
            continue
        if line.strip():
            block.fail(_stray(block, line))
        i += 1
    block.fail("the call is not terminated: end it with a line that is exactly `</call>`")
    return block, i


def _stray(block: _Block, line: str) -> str:
    message = (f"the line {line.strip()[:80]!r} inside the call is not an argument: write each argument "
               "as `<NAME>value</NAME>`, or a long value between a line `<NAME>` and a line `</NAME>`")
    if block.last_long:
        name = block.last_long
        message += (f" (if it belongs to `{name}`, that value contains a line `</{name}>`: open it with "
                    f'`<{name} until="END-WORD">` and end it with a line that is exactly `END-WORD`)')
    return message


def _read_value(lines: list[str], i: int, arg: re.Match, block: _Block) -> int:
    name, until, rest = arg[1], arg[2], arg[3]
    closer = until or f"</{name}>"
    if name in block.values:
        block.fail(f"the argument `{name}` is given twice")
    if not until and rest.rstrip().endswith(closer):
        block.values[name] = rest.rstrip()[: -len(closer)].strip()
        return i + 1
    body = [rest] if rest.strip() else []
    end, value = _value_end(lines, i + 1, closer, loose=not until)
    block.values[name] = "\n".join(body + value)
    if end is None:
        block.fail(f"the value of `{name}` is not terminated, so the rest of your reply was read as part of it: "
                   f"end the value with a line that is exactly `{closer}`")
        return len(lines)
    block.last_long = name
    return end + 1


def _value_end(lines: list[str], start: int, closer: str, loose: bool) -> tuple[int | None, list[str]]:
    """The line ending a multi-line value, and the value's lines: the first line that is exactly
    `closer`, else (`loose`) the first line ending with it; None and the rest if there is none."""
    for j in range(start, len(lines)):
        if lines[j].strip() == closer:
            return j, lines[start:j]
    for j in range(start, len(lines)) if loose else ():
        if lines[j].rstrip().endswith(closer):
            return j, [*lines[start:j], lines[j].rstrip()[: -len(closer)]]
    return None, lines[start:]


def _to_call(block: _Block, n: int, functions: dict[str, dict]) -> ToolCall:
    from gitswarm.models.client import ToolCall

    fn, error = functions.get(block.name), block.error
    if fn is None:
        error = error or f"there is no tool {block.name!r}; the tools are: {', '.join(functions)}"
        arguments: dict = dict(block.values)
    else:
        arguments, problem = _arguments(block, fn)
        error = error or problem
    raw = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(f"text_call_{n}", block.name, None if error else arguments, raw, error)


def _arguments(block: _Block, fn: dict) -> tuple[dict, str | None]:
    """The call's values typed from the schema. An argument the tool does not have passes as
    its raw text: the engine drops it with a note, as it does for a native call."""
    params = fn.get("parameters") or {}
    props, problems, arguments = params.get("properties") or {}, [], {}
    for key, raw in block.values.items():
        try:
            arguments[key] = _typed(props[key], raw, key) if key in props else raw
        except _ArgError as exc:
            problems.append(str(exc))
            arguments[key] = raw
    missing = [key for key in params.get("required") or [] if key not in block.values]
    if missing:
        tags = ", ".join(f"`<{key}>...</{key}>`" for key in missing)
        unknown = [f"`{key}`" for key in block.values if key not in props]
        aside = f" ({block.name} has no argument {', '.join(unknown)})" if unknown else ""
        problems.append(f"{block.name} needs {', '.join(f'`{k}`' for k in missing)}: add {tags} to the call{aside}")
    return arguments, "; ".join(problems) or None


def _typed(spec: dict, raw: str, name: str) -> object:
    kind, text = schema_kind(spec), raw.strip()
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        raise _ArgError(f"`{name}` must be {'an integer' if kind == 'integer' else 'a number'}, "
                        f"written in digits; got {text!r}") from None
    if kind == "boolean":
        if text.lower() not in _BOOLEANS:
            raise _ArgError(f"`{name}` must be true or false; got {text!r}")
        return _BOOLEANS[text.lower()]
    if kind == "array":
        return [_typed(spec.get("items") or {}, item, f"an item of {name}") for item in _items(text, name)]
    return raw


def _items(text: str, name: str) -> list[str]:
    if text.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _ArgError(f"`{name}` starts like a JSON list but is not valid JSON ({exc}): "
                            "give one item per line instead") from None
        if isinstance(items, list):
            return [item if isinstance(item, str) else json.dumps(item) for item in items]
    return [BULLET.sub("", line.strip()) for line in text.split("\n") if line.strip()]


def schema_kind(spec: dict) -> str:
    """The JSON type an argument's schema gives (of an optional one, `["number", "null"]`, too)."""
    kind = spec.get("type", "string")  # ["number", "null"] for an optional number
    return next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind


def _prose(items: list) -> str:
    """The text outside calls, without code fences that only wrapped calls."""
    kept: list[str] = []
    in_fence = wrapping = False
    for k, item in enumerate(items):
        if isinstance(item, _Block):
            kept.append("")
            continue
        if not _FENCE.match(item) or in_fence:
            in_fence ^= bool(_FENCE.match(item))
            kept.append(item)
        elif wrapping and isinstance(_neighbour(items, k, -1), _Block):
            wrapping = False
        elif isinstance(_neighbour(items, k, 1), _Block):
            wrapping = True
        else:
            in_fence = True
            kept.append(item)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def _neighbour(items: list, k: int, step: int) -> object:
    k += step
    while 0 <= k < len(items) and isinstance(items[k], str) and not items[k].strip():
        k += step
    return items[k] if 0 <= k < len(items) else None
