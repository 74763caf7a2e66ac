"""Read the shape of a cleaned answer: lists, sets, tuples, intervals, unions, `n = ...`.

Shapes only; the values inside stay text (`Leaf`) for `answers` to compare. Conventions:
`\\{a, b\\}` is a set; `(a, b, c)` a tuple (`(a, b)` is also an open interval when compared
with one); `[a, b)`, `(0, \\infty)` intervals; a bare `a, b, c` (or `a or b`) a list of
alternatives, order ignored; `n = 1, 2, 4`, `n \\in \\{1, 2, 4\\}`, `n=1, n=2, n=4` the same
family of values labelled `n`; `0 < c \\le 1`, `x \\ge 2` intervals labelled by their
variable; `a \\pm b` the list `a + b, a - b`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitswarm.referee.latex import matching_brace, split_top


@dataclass(frozen=True)
class Leaf:
    """One expression, or prose."""

    text: str


@dataclass(frozen=True)
class Coll:
    """Several values: kind "set" or "list" (order ignored) or "tuple" (order matters)."""

    kind: str
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Interval:
    """A real interval; infinite ends are always open."""

    lo: Leaf
    hi: Leaf
    lo_closed: bool
    hi_closed: bool


@dataclass(frozen=True)
class Union:
    """A union of intervals and sets."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Labeled:
    """`label = value` or `label \\in value`: a variable or function and what it equals."""

    label: str
    value: Node


Node = Leaf | Coll | Interval | Union | Labeled
_SEPARATORS = (", and ", ", or ", ",", ";", " or ", " and ")
_RELATION = re.compile(r"(\\le|\\ge|<|>)")
_VARIABLE = re.compile(r"(?:[a-zA-Z]|\\[a-zA-Z]+)(?:_\{?[a-zA-Z0-9]+\}?)?")
_FUNCTION = re.compile(r"[a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?\([a-zA-Z, ]+\)")
_MAX_RANGE = 10_000
_EMPTY = {"\\emptyset", "\\varnothing", "\\{\\}", "\\o"}


def read(text: str) -> Node:
    """The shape of one cleaned answer."""
    parts = [p for p in split_top(text, _SEPARATORS) if p]
    if len(parts) <= 1:
        return _item(text.strip())
    return _family([_item(p) for p in _expand_range(parts)])


def _expand_range(parts: list[str]) -> list[str]:
    """`1, 2, \\ldots, 9` (integers, one step, at most 10,000 of them) as all its values."""
    if parts.count("\\ldots") != 1 or parts[-1] == "\\ldots":
        return parts
    dots = parts.index("\\ldots")
    head, tail = parts[:dots], parts[dots + 1 :]
    if len(head) < 2 or len(tail) != 1 or not all(re.fullmatch(r"-?\d+", p) for p in head + tail):
        return parts
    values = [int(p) for p in head]
    step, last = values[1] - values[0], int(tail[0])
    if step <= 0 or values != list(range(values[0], values[-1] + 1, step)):
        return parts
    if (last - values[0]) % step or not 0 <= (last - values[0]) // step <= _MAX_RANGE:
        return parts
    return [str(v) for v in range(values[0], last + 1, step)]


def _family(items: list[Node]) -> Node:
    """`n = 1, 2, 4` and `n = 1, n = 2` are one labelled list; anything else a plain list."""
    first = items[0]
    if isinstance(first, Labeled) and _is_var(first.label):
        rest = items[1:]
        if all(not isinstance(i, Labeled) for i in rest):
            return Labeled(first.label, Coll("list", (first.value, *rest)))
        same = [i for i in items if isinstance(i, Labeled) and i.label == first.label]
        if len(same) == len(items):
            return Labeled(first.label, Coll("list", tuple(i.value for i in same)))
    return Coll("list", tuple(items))


def _item(text: str) -> Node:
    if text in _EMPTY:
        return Coll("set", ())
    if len(parts := split_top(text, ("\\cup",))) > 1:
        return Union(tuple(_item(p) for p in parts))
    for sep in ("=", "\\in"):
        parts = split_top(text, (sep,))
        if len(parts) == 2 and _is_label(parts[0]) and parts[1] and not _RELATION.search(text):
            return Labeled(parts[0], _item(parts[1]))
    if _RELATION.search(text):
        return _relation(text)
    return _bracketed(text) or _plus_minus(text) or Leaf(text)


def _bracketed(text: str) -> Node | None:
    if text.startswith("\\{") and text.endswith("\\}") and _balanced(text[2:-2]):
        inner = text[2:-2].strip()
        items = split_top(inner, (",",)) if inner else []
        return Coll("set", tuple(_item(p) for p in items))
    if len(text) < 2 or text[0] not in "([" or text[-1] not in ")]":
        return None
    if not _balanced(text[1:-1]):
        return None
    parts = split_top(text[1:-1], (",",))
    if text[0] == "(" and text[-1] == ")" and matching_brace(text, 0) == len(text) - 1:
        if len(parts) < 2:
            return None
        if len(parts) == 2 and _infinite(parts):
            return _interval(parts, False, False)
        return Coll("tuple", tuple(_item(p) for p in parts))
    if len(parts) == 2:
        return _interval(parts, text[0] == "[", text[-1] == "]")
    return None


def _interval(ends: list[str], lo_closed: bool, hi_closed: bool) -> Interval:
    lo, hi = ends
    return Interval(Leaf(lo), Leaf(hi), lo_closed and "infty" not in lo,
                    hi_closed and "infty" not in hi)


def _infinite(ends: list[str]) -> bool:
    return ends[0] == "-\\infty" or ends[1] == "\\infty"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch in "([{") - (ch in ")]}")
        if depth < 0:
            return False
    return depth == 0


def _relation(text: str) -> Node:
    """`0 < c \\le 1` or `x \\ge 2` (either side) as an interval labelled by its variable."""
    pieces = [p.strip() for p in _RELATION.split(text)]
    terms, ops = pieces[::2], pieces[1::2]
    if all(op in (">", "\\ge") for op in ops):
        terms, ops = terms[::-1], [_flip(op) for op in reversed(ops)]
    if not all(op in ("<", "\\le") for op in ops):
        return Leaf(text)
    closed = [op == "\\le" for op in ops]
    if len(terms) == 3 and _is_var(terms[1]) and not _is_var(terms[0]):
        return Labeled(terms[1], _interval([terms[0], terms[2]], *closed))
    if len(terms) == 2 and _is_var(terms[0]) and not _is_var(terms[1]):
        return Labeled(terms[0], _interval(["-\\infty", terms[1]], False, closed[0]))
    if len(terms) == 2 and _is_var(terms[1]) and not _is_var(terms[0]):
        return Labeled(terms[1], _interval([terms[0], "\\infty"], closed[0], False))
    return Leaf(text)


def _is_label(text: str) -> bool:
    """A variable (`n`, `a_1`) or a function of variables (`f(x)`, `T(p,q,r)`)."""
    return _is_var(text) or bool(_FUNCTION.fullmatch(text))


def _is_var(text: str) -> bool:
    return bool(_VARIABLE.fullmatch(text)) and text not in ("\\pi", "\\infty", "e")


def _flip(op: str) -> str:
    return {"<": ">", ">": "<", "\\le": "\\ge", "\\ge": "\\le"}[op]


def _plus_minus(text: str) -> Node | None:
    parts = split_top(text, ("\\pm",))
    if len(parts) != 2:
        return None
    return Coll("list", (Leaf(f"{parts[0]}+{parts[1]}"), Leaf(f"{parts[0]}-{parts[1]}")))
