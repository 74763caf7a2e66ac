"""A tool call's arguments checked against the tool's JSON schema (prompts/tools.yaml) before
the tool runs: a model's call is input from outside, whatever JSON value it sent.

Every problem of one call is reported at once, each naming the field, what it must be and
what was sent. Only unambiguous mistakes are mended, and each mend is said in a note the
model reads: a number for a string, one string for a list of strings, 3.0 or "3" for an
integer, "true"/"false" for a boolean. Unknown fields are dropped with a note, and an
optional field sent as null counts as left out. A string JSON gave a lone surrogate is
refused: no file, commit message or program text can hold it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeGuard

from gitswarm.errors import Refusal

_DIGITS = re.compile(r"^\s*[+-]?\d+\s*$")
_BOOLEANS = {"true": True, "false": False}


class ToolError(Refusal):
    """A tool call the agent must fix; the message goes back to it (`errors.Refusal`)."""


class BadArguments(ToolError):
    """Arguments that do not fit the tool's schema: every problem of the call, and the notes
    on what was dropped or read differently."""

    def __init__(self, tool: str, problems: list[str], notes: list[str]) -> None:
        self.tool, self.problems, self.notes = tool, problems, notes
        if len(problems) == 1:
            text = problems[0]
        else:
            text = f"{len(problems)} problems with the arguments of {tool}:\n" + "\n".join(f"- {p}" for p in problems)
        super().__init__(with_notes(text, notes))


@dataclass(frozen=True)
class Checked:
    """Arguments fit to pass to the tool, and the notes on what was dropped or mended."""

    arguments: dict
    notes: list[str]


class _Misfit(Exception):
    """One value that does not fit its schema; the message says what to send instead."""


def with_notes(text: str, notes: list[str]) -> str:
    """`text`, with the notes on a line of their own after it."""
    return f"{text}\nnote: {'; '.join(notes)}" if notes else text


def check_arguments(tool: str, parameters: dict, arguments: object) -> Checked:
    """`arguments` (any JSON value) checked against `parameters`, the tool's object schema.
    Raises BadArguments naming every problem."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        example = ", ".join(f'"{key}": ...' for key in parameters.get("required") or [])
        raise BadArguments(tool, [f"the arguments of {tool} must be one JSON object of named fields "
                                  f"({{{example}}}); you sent {_sent(arguments)}"], [])
    props, required = parameters.get("properties") or {}, parameters.get("required") or []
    checked, problems, notes = {}, [], []
    for key, value in arguments.items():
        if key not in props:
            notes.append(f"ignored `{key}`: {tool} has no such argument")
        elif value is not None:  # null: left out
            try:
                checked[key] = _value(props[key], value, key, notes)
            except _Misfit as exc:
                problems.append(str(exc))
    missing = [key for key in required if arguments.get(key) is None]
    if missing:
        problems.insert(0, f"{tool} needs {', '.join(f'`{key}`' for key in missing)}")
    if problems:
        raise BadArguments(tool, problems, notes)
    return Checked(checked, notes)


def _value(spec: dict, value: object, where: str, notes: list[str]) -> object:
    """`value` as `spec` wants it (mended, with a note, where that is unambiguous)."""
    kinds = spec.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    kind = next((k for k in kinds if k != "null"), None)
    if kind is None or (value is None and "null" in kinds):
        return value
    mended = _CHECKS.get(kind, _any)(spec, value, where)
    if "enum" in spec and mended not in spec["enum"]:
        raise _Misfit(f"`{where}` must be one of {', '.join(map(str, spec['enum']))}; you sent {_sent(value)}")
    if kind in ("integer", "number"):
        if "minimum" in spec and mended < spec["minimum"]:
            raise _Misfit(f"`{where}` must be at least {spec['minimum']}; you sent {mended}")
        if "maximum" in spec and mended > spec["maximum"]:
            raise _Misfit(f"`{where}` must be at most {spec['maximum']}; you sent {mended}")
    if mended is not value:
        notes.append(f"`{where}` {_sent(value, bare=True)} read as {_sent(mended, bare=True)}")
    if kind == "array" and isinstance(mended, list):  # _array's list
        mended = [_value(spec.get("items") or {}, item, f"{where}[{n}]", notes) for n, item in enumerate(mended)]
    return mended


def _string(spec: dict, value: object, where: str) -> str:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:  # JSON's "\ud800": no file, commit or program can hold it
            raise _Misfit(f"`{where}` is not valid UTF-8 text (it holds a lone surrogate)") from None
        return value
    if _is_number(value):
        return str(value)
    fix = ": send one string of text, not a list (join the parts yourself)" if isinstance(value, list) else ""
    raise _Misfit(f"`{where}` must be a string; you sent {_sent(value)}{fix}")


def _integer(spec: dict, value: object, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _DIGITS.match(value):
        return int(value)
    raise _Misfit(f"`{where}` must be a whole number, written in digits; you sent {_sent(value)}")


def _number(spec: dict, value: object, where: str) -> int | float:
    if _is_number(value):
        return value
    raise _Misfit(f"`{where}` must be a number; you sent {_sent(value)}")


def _boolean(spec: dict, value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _BOOLEANS[value.strip().lower()]
    raise _Misfit(f"`{where}` must be true or false; you sent {_sent(value)}")


def _array(spec: dict, value: object, where: str) -> list:
    items = (spec.get("items") or {}).get("type")
    if isinstance(value, list):
        return value
    if isinstance(value, str) and items == "string":
        return [value]
    of = f" of {items}s" if isinstance(items, str) else ""
    raise _Misfit(f"`{where}` must be a list{of}; you sent {_sent(value)}")


def _object(spec: dict, value: object, where: str) -> dict:
    if isinstance(value, dict):
        return value
    raise _Misfit(f"`{where}` must be an object of named fields; you sent {_sent(value)}")


def _any(spec: dict, value: object, where: str) -> object:
    return value


_CHECKS = {"string": _string, "integer": _integer, "number": _number, "boolean": _boolean, "array": _array,
           "object": _object}


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _sent(value: object, bare: bool = False) -> str:
    """How a value is named to the model: `a list`, `an object`, `null`, `true`, `'proof'`, `3`
    (`bare`: lists shown as written, for notes on a mended value)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, list):
        return repr(value)[:60] if bare else "a list"
    if isinstance(value, dict):
        return "an object"
    return repr(value)
