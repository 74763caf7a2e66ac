"""Read JSONL records through a field mapping: which key, or dotted path, holds each part.

`jsonl` reads the keys `id`, `problem`, `answer` (and `competition` as the source); `gsm8k`
reads `question` and an `answer` that ends with `#### <final answer>`. A user's
`--field answer=final.value` changes one entry. Every record is checked: a missing, empty or
non-text field, or an answer without its marker, is a RowError for that line, never a
shifted or guessed value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from gitswarm.errors import BadInput
from gitswarm.problems.loader import ID_PATTERN
from gitswarm.problems.records import Record, RowError

TARGETS = ("id", "problem", "answer", "solution", "source", "title")
"""What a mapping can fill: a problem file's id, statement, answer key and hidden solution,
its source and its title."""
_KEYS = ("id", "problem", "answer")
"""The targets that must be non-empty text; the others may be null or empty."""
_MISSING = object()
_CALCULATOR = re.compile(r"<<[^<>\n]*>>")
_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


@dataclass(frozen=True)
class FieldMap:
    """Where each part of a problem lies in a JSONL record, and how the answer is cut."""

    paths: dict[str, str]
    """Target (one of TARGETS) -> dotted path into the record, e.g. `answer` -> `final.value`."""
    given: frozenset[str] = field(default_factory=frozenset)
    """Targets the user mapped: every record must have them (the defaults may be absent)."""
    answer_after: str | None = None
    """Cut the answer at the last occurrence of this marker; the text before it becomes the
    solution unless a solution field is mapped."""
    calculator: bool = False
    """Remove GSM8K's calculator annotations (`<<16-3-4=9>>`) from the solution."""

    def with_fields(self, specs: list[str], answer_after: str | None = None) -> FieldMap:
        """This mapping with the user's `target=path` entries (and marker) put over it."""
        paths, given = dict(self.paths), set(self.given)
        for spec in specs:
            target, sep, path = (part.strip() for part in spec.partition("="))
            if target not in TARGETS or not sep or not all(path.split(".")):
                raise BadInput(f"bad field mapping {spec!r}: write TARGET=PATH with TARGET one of "
                                 f"{', '.join(TARGETS)} and PATH a key or dotted path, e.g. answer=final.value")
            if target in given:
                raise BadInput(f"{target!r} is mapped twice: give one --field {target}=PATH")
            paths[target] = path
            given.add(target)
        if answer_after is not None and not answer_after.strip():
            raise BadInput("--answer-after needs a marker, e.g. '####'")
        return replace(self, paths=paths, given=frozenset(given),
                       answer_after=answer_after if answer_after is not None else self.answer_after)


JSONL = FieldMap({"id": "id", "problem": "problem", "answer": "answer", "source": "competition"})
GSM8K = FieldMap({"id": "id", "problem": "question", "answer": "answer"},
                 answer_after="####", calculator=True)


def read_jsonl(text: str, fields: FieldMap, id_prefix: str) -> tuple[list[Record], list[RowError]]:
    """One record per non-blank line; rows are line numbers.

    Ids come from the id field; when it is not mapped by the user and no line has one, the
    ids are `<id_prefix>-<row as 4 digits>` (gsm8k-0001), the same whatever is imported.
    """
    parsed = [(row, _object(line)) for row, line in enumerate(text.split("\n"), start=1) if line.strip()]
    numbered = "id" not in fields.given and not any(
        isinstance(obj, dict) and _lookup(obj, fields.paths["id"]) not in (_MISSING, None) for _, obj in parsed)
    if numbered and (not ID_PATTERN.match(f"{id_prefix}-0001") or ".." in id_prefix):
        raise BadInput(f"the records have no ids, and the id prefix {id_prefix!r} makes no safe file name: "
                         "give one that starts with a letter or digit (--id-prefix)")
    records: list[Record] = []
    errors: list[RowError] = []
    for row, obj in parsed:
        if isinstance(obj, str):
            errors.append(RowError(row, None, obj))
            continue
        values, defects = _values(obj, fields)
        if numbered:
            values["id"] = f"{id_prefix}-{row:04d}"
        elif not values["id"] and "id" not in defects:
            defects["id"] = "missing"
        if defects:
            errors.append(RowError(row, values["id"] or None, _message(defects, fields, numbered)))
        else:
            records.append(Record(row, values, figure=_has_figure(obj, values["problem"])))
    return records, errors


def _has_figure(obj: dict, statement: str) -> bool:
    """Whether the record says its problem has a figure: a true `has_image` (MathArena's flag),
    a non-empty `image(s)` or `figure(s)` field, or a statement that includes a graphics file."""
    return any(bool(obj.get(key)) for key in FIGURE_KEYS) or "\\includegraphics" in statement


FIGURE_KEYS = ("has_image", "image", "images", "figure", "figures")
"""Record keys that announce a figure the import cannot carry into a problem file."""


def canonical_answer(text: str) -> str:
    """The answer as stored: a number with thousands commas (1,200) without them, as the
    referee reads it; anything else unchanged."""
    text = text.strip()
    return text.replace(",", "") if _THOUSANDS.fullmatch(text) else text


def _object(line: str) -> dict | str:
    """The line's JSON object, or the message saying why it is none."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"invalid JSON ({exc.msg} at column {exc.colno}): fix or remove the line"
    if not isinstance(obj, dict):
        return f"not a JSON object but {_kind(obj)}: write one {{...}} object per line"
    return obj


def _values(obj: dict, fields: FieldMap) -> tuple[dict[str, str], dict[str, str]]:
    """Every target's text ('' when absent), and what is wrong with each bad one."""
    values = dict.fromkeys(TARGETS, "")
    defects: dict[str, str] = {}
    for target, path in fields.paths.items():
        found = _lookup(obj, path)
        if found is _MISSING or (found is None and target == "id"):
            if target in ("problem", "answer") or target in fields.given - {"id"}:
                defects[target] = "missing"
        elif found is None and target not in _KEYS:
            continue
        elif (text := _text(found)) is None:
            defects[target] = f"is {_kind(found)}, not text or a number"
        elif not text and target in _KEYS:
            defects[target] = "empty"
        else:
            values[target] = text
    if fields.answer_after and values["answer"]:
        _cut(values, fields, defects)
    if fields.calculator and values["solution"]:
        values["solution"] = _CALCULATOR.sub("", values["solution"])
    values["answer"] = canonical_answer(values["answer"])
    return values, defects


def _cut(values: dict[str, str], fields: FieldMap, defects: dict[str, str]) -> None:
    """Split the answer field at the last marker: the final answer after it, the worked
    solution before it."""
    marker = fields.answer_after or ""
    before, found, after = values["answer"].rpartition(marker)
    if not found:
        defects["answer"] = f"has no {marker!r} before its final answer"
    elif not after.strip():
        defects["answer"] = f"has nothing after its last {marker!r}"
    else:
        values["answer"] = after.strip()
        if "solution" not in fields.given and before.strip():
            values["solution"] = before.strip()


def _message(defects: dict[str, str], fields: FieldMap, numbered: bool) -> str:
    """E.g. `missing answer ('final'); empty problem: each line needs ...`."""
    def name(target: str) -> str:
        path = fields.paths[target]
        return target if path == target else f"{target} ({path!r})"

    parts = [f"{problem} {name(target)}" if problem in ("missing", "empty") else f"{name(target)} {problem}"
             for target, problem in defects.items()]
    needed = [name(t) for t in TARGETS if t in ("problem", "answer") or t in fields.given
              or (t == "id" and not numbered)]
    return (f"{'; '.join(parts)}: each line needs {', '.join(needed)} as text or numbers"
            + (f", the answer after {fields.answer_after!r}" if fields.answer_after else ""))


def _lookup(obj: object, path: str) -> object:
    """The value at a dotted path (`a.b`, `choices.0.text`: a number indexes a list), else _MISSING."""
    for key in path.split("."):
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
            obj = obj[int(key)]
        else:
            return _MISSING
    return obj


def _text(value: object) -> str | None:
    """Text as it is written, a number as JSON writes it; None for anything else."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return None
    return json.dumps(value) if isinstance(value, int | float) else None


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", bool: "true or false", type(None): "null"}.get(
        type(value), type(value).__name__)
