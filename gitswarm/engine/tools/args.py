"""A tool call's arguments, checked by the tool's pydantic argument model (`Tool.args`) before
the tool runs: a model's call is input from outside, whatever JSON value it sent.

Every problem of one call is reported at once, each naming the field, what it must be and
what was sent. Only unambiguous mistakes are mended, by `mode="before"` validators on the field
types below (`Text`, `Texts`, `Whole`, `Number`, `Flag`, `Fields`), and each mend is said in a
note the model reads: a number for a string, one string for a list of strings, 3.0 or "3" for
an integer, "true"/"false" for a boolean. A field that takes one of a list of words known at
run time (the run's kinds, a role's) is `Annotated[str, OneOf(words), AS_TEXT]`. Unknown fields
are dropped with a note, and an optional field sent as null counts as left out. A string JSON
gave a lone surrogate is refused: no file, commit message or program text can hold it. The
models are strict past their validators, so pydantic converts nothing silently."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeGuard, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from gitswarm.errors import Refusal

_DIGITS = re.compile(r"^\s*[+-]?\d+\s*$")
_BOOLEANS = {"true": True, "false": False}
LAST = ""
"""The field a note is filed under to come after the notes on the fields sent."""


class ToolError(Refusal):
    """A tool call the agent must fix; the message goes back to it (`errors.Refusal`)."""


class BadArguments(ToolError):
    """Arguments that do not fit the tool's model: every problem of the call, and the notes
    on what was dropped or read differently."""

    def __init__(self, tool: str, problems: list[str], notes: list[str]) -> None:
        self.tool, self.problems, self.notes = tool, problems, notes
        if len(problems) == 1:
            text = problems[0]
        else:
            text = f"{len(problems)} problems with the arguments of {tool}:\n" + "\n".join(f"- {p}" for p in problems)
        super().__init__(with_notes(text, notes))


class ToolArgs(BaseModel):
    """The arguments of one tool: its fields are the schema the model is offered
    (`specs.tool_schemas`); `check` validates a call by it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _named_fields(cls, data: object, info: ValidationInfo) -> dict[str, object]:
        """One JSON object (null: no arguments), its unknown fields dropped with a note and its
        nulls left out."""
        tool = info.context["tool"] if info.context else cls.__name__
        if data is None:
            return {}
        if not isinstance(data, dict):
            example = ", ".join(f'"{key}": ...' for key, field in cls.model_fields.items() if field.is_required())
            raise _misfit(f"the arguments of {tool} must be one JSON object of named fields ({{{example}}}); "
                          f"you sent {sent(data)}")
        for key in data:
            if key not in cls.model_fields:
                note(info, key, f"ignored `{key}`: {tool} has no such argument")
        return {k: v for k, v in data.items() if k in cls.model_fields and v is not None}


A = TypeVar("A", bound=ToolArgs)


@dataclass(frozen=True)
class Checked(Generic[A]):
    """Arguments fit to pass to the tool, and the notes on what was dropped or mended."""

    arguments: A
    notes: list[str]


def check(tool: str, model: type[A], arguments: object) -> Checked[A]:
    """`arguments` (any JSON value) validated by `model`, the arguments of `tool`. Raises
    BadArguments naming every problem, in the order the fields were sent."""
    told: list[tuple[str, str]] = []
    order = list(arguments) if isinstance(arguments, dict) else []
    try:
        value = model.model_validate(arguments, context={"tool": tool, "notes": told})
    except ValidationError as exc:
        errors = sorted(exc.errors(), key=lambda e: _place(order, str(e["loc"][0]) if e["loc"] else LAST))
        failed = {str(e["loc"][0]) for e in errors if e["loc"]}
        raise BadArguments(tool, _problems(tool, model, errors), _notes(told, order, failed)) from None
    return Checked(value, _notes(told, order, set()))


def with_notes(text: str, notes: list[str]) -> str:
    """`text`, with the notes on a line of their own after it."""
    return f"{text}\nnote: {'; '.join(notes)}" if notes else text


def note(info: ValidationInfo, field: str, text: str) -> None:
    """Tell the model, after the call, what was dropped or read differently in `field`."""
    if info.context is not None:
        info.context["notes"].append((field, text))


def _place(order: list[str], field: str) -> int:
    return order.index(field) if field in order else len(order)


def _notes(told: list[tuple[str, str]], order: list[str], failed: set[str]) -> list[str]:
    """The notes in the order their fields were sent, none on a field that was refused."""
    return [text for field, text in sorted(told, key=lambda n: _place(order, n[0])) if field not in failed]


def _problems(tool: str, model: type[ToolArgs], errors: list[Any]) -> list[str]:
    """Pydantic's errors in the words the model reads: the missing fields first, then each
    field's problem."""
    missing = [f"`{e['loc'][0]}`" for e in errors if e["type"] == "missing"]
    return [*([f"{tool} needs {', '.join(missing)}"] if missing else []),
            *(_problem(model, e) for e in errors if e["type"] != "missing")]


def _problem(model: type[ToolArgs], error: Any) -> str:
    """One field's problem: a misfit says its own; an enum or a bound is named as the schema
    has it."""
    where = "".join(f"[{part}]" if isinstance(part, int) else str(part) for part in error["loc"])
    ctx, value = error.get("ctx") or {}, error["input"]
    if error["type"] == "literal_error":
        text = f"must be one of {', '.join(_allowed(model, where))}; you sent {sent(value)}"
    elif error["type"] == "greater_than_equal":
        text = f"must be at least {ctx['ge']}; you sent {value}"
    elif error["type"] == "less_than_equal":
        text = f"must be at most {ctx['le']}; you sent {value}"
    else:
        text = error["msg"]
    return f"`{where}` {text}" if where else text


def _allowed(model: type[ToolArgs], field: str) -> list[str]:
    """The values a field of `model` takes, as its schema lists them."""
    spec = model.model_json_schema()["properties"][field]
    for option in [spec, *spec.get("anyOf", [])]:
        if "enum" in option:
            return [str(v) for v in option["enum"]]
        if "const" in option:
            return [str(option["const"])]
    return []


def _misfit(text: str) -> PydanticCustomError:
    """A value that does not fit its field; the text says what to send instead."""
    return PydanticCustomError("misfit", "{text}", {"text": text})


def _mended(info: ValidationInfo, value: object, mended: object, where: str = "") -> object:
    note(info, info.field_name or LAST, f"`{where or info.field_name}` {sent(value, bare=True)} read as "
                                         f"{sent(mended, bare=True)}")
    return mended


def _text(value: object, info: ValidationInfo) -> object:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:  # JSON's "\ud800": no file, commit or program can hold it
            raise _misfit("is not valid UTF-8 text (it holds a lone surrogate)") from None
        return value
    if _is_number(value):
        return _mended(info, value, str(value))
    fix = ": send one string of text, not a list (join the parts yourself)" if isinstance(value, list) else ""
    raise _misfit(f"must be a string; you sent {sent(value)}{fix}")


def _texts(value: object, info: ValidationInfo) -> object:
    """A list of strings: one string is a list of one; numbers among the items are strings
    (each item is then checked as `Text`)."""
    if isinstance(value, str):
        return _mended(info, value, [value])
    if not isinstance(value, list):
        raise _misfit(f"must be a list of strings; you sent {sent(value)}")
    return [_mended(info, item, str(item), f"{info.field_name}[{n}]") if _is_number(item) else item
            for n, item in enumerate(value)]


def _whole(value: object, info: ValidationInfo) -> object:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return _mended(info, value, int(value))
    if isinstance(value, str) and _DIGITS.match(value):
        return _mended(info, value, int(value))
    raise _misfit(f"must be a whole number, written in digits; you sent {sent(value)}")


def _number(value: object, info: ValidationInfo) -> object:
    if _is_number(value):
        return value
    raise _misfit(f"must be a number; you sent {sent(value)}")


def _flag(value: object, info: ValidationInfo) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _mended(info, value, _BOOLEANS[value.strip().lower()])
    raise _misfit(f"must be true or false; you sent {sent(value)}")


def _fields(value: object, info: ValidationInfo) -> object:
    if isinstance(value, dict):
        return value
    raise _misfit(f"must be an object of named fields; you sent {sent(value)}")


@dataclass(frozen=True)
class OneOf:
    """A string field that takes one of `words`, as a `Literal` of them would: offered as an
    enum, checked as one. For words the engine knows at run time (the domain's kinds), where a
    `Literal` would spell them again."""

    words: tuple[str, ...]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.literal_schema([str(word) for word in self.words])


AS_TEXT = BeforeValidator(_text)
"""A string field's mending, for the types built on one (`Annotated[Literal[...], AS_TEXT]`)."""
Text = Annotated[str, AS_TEXT]
Texts = Annotated[list[Text], BeforeValidator(_texts)]
Whole = Annotated[int, BeforeValidator(_whole)]
Number = Annotated[float, BeforeValidator(_number)]
Flag = Annotated[bool, BeforeValidator(_flag)]
Fields = Annotated[dict[str, Any], BeforeValidator(_fields)]


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def sent(value: object, bare: bool = False) -> str:
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
