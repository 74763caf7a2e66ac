"""Tool-call arguments as models really write them: parsed leniently, and checked for TeX
that JSON's escapes ate (`"\\frac"` written as `"\frac"` arrives as a form feed and "rac")."""

from __future__ import annotations

import json
import re

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
# What a JSON escape leaves of a TeX command: \f and \b never belong in text; \t, \r and \n
# only when the letters after them spell a common command and then stop.
_EATEN = (
    (re.compile("\f([A-Za-z]*)"), "\\f", "form feed"),
    (re.compile("\b([A-Za-z]*)"), "\\b", "backspace"),
    (re.compile("\t(heta|au|imes|ext[a-z]*|frac|ilde|o|op|riangle[a-z]*|an|anh|ag|extbf|extit)(?![A-Za-z])"),
     "\\t", "tab"),
    (re.compile("\r(ho|ight[a-z]*|angle|floor|ceil|brace|brack|m|ef)(?![A-Za-z])"), "\\r", "carriage return"),
    (re.compile("\n(eq|abla|eg|otin|mid|leq|geq|ewline|subseteq|supseteq|parallel|exists|ot)(?=[\\s${}_^(),.=]|$)"),
     "\\n", "newline"),
)


CODE_KEYS = frozenset({"command", "code"})
"""Arguments that hold a program (a shell command, Python source), never TeX: a line that begins
`eq(` there is code, not an eaten `\\neq`."""
AMBIGUOUS = ("\\t", "\\r", "\\n")
"""The escapes that also stand for real whitespace: taken for eaten TeX only in text that holds TeX
math (a `$`), so code and prose staged as files are left alone."""


class ArgumentsError(ValueError):
    """Arguments that cannot be used as they are; the message says what to fix."""


def parse_arguments(raw: str) -> dict:
    """A tool call's arguments as an object: JSON, with raw control characters inside strings
    allowed, a code fence around it and trailing commas tolerated. Raises ArgumentsError."""
    text = raw.strip()
    if not text:
        return {}
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as first:
        try:
            value = json.loads(_TRAILING_COMMA.sub(r"\1", text), strict=False)
        except json.JSONDecodeError:
            raise ArgumentsError(f"the arguments are not valid JSON ({first})") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"the arguments are a JSON {type(value).__name__}, not an object")
    eaten = eaten_tex(value)
    if eaten:
        raise ArgumentsError(eaten)
    return value


def eaten_tex(value: object, where: str = "") -> str | None:
    """What to tell the model when a string holds a TeX command that a JSON escape ate; None
    when every string is clean."""
    if isinstance(value, dict):
        return next((m for k, v in value.items() if (m := eaten_tex(v, k if not where else f"{where}.{k}"))), None)
    if isinstance(value, list):
        return next((m for n, v in enumerate(value) if (m := eaten_tex(v, f"{where}[{n}]"))), None)
    if not isinstance(value, str) or where.rsplit(".", 1)[-1] in CODE_KEYS:
        return None
    for pattern, escape, name in _EATEN:
        if escape in AMBIGUOUS and "$" not in value:
            continue
        found = pattern.search(value)
        if found:
            command = escape + found.group(1)
            return (f"`{where or 'an argument'}` holds a {name} where the TeX command `{command}` was "
                    f"probably meant: in JSON, `{escape}` is an escape, so a TeX backslash must be doubled "
                    f"(`\\{command}`). Send the call again with every backslash of your TeX written as `\\\\`.")
    return None
