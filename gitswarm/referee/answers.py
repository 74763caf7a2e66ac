"""Find a solution's final answer and judge it against the key, conservatively.

Extraction convention (`extract_answer`): the content of the last `\\boxed{...}` (braces
balanced); else the last line that starts with `Answer:`, `**Answer:**`, `Final answer:`
(any case, optional bold); else nothing.

Equivalence (`equivalent`): both sides are cleaned (`latex.clean`), read into shapes
(`structure.read`) and compared shape by shape. Numbers written exactly (integers,
decimals, `a/b`, `\\frac{a}{b}`) are compared as exact fractions; other expressions by
sympy in a helper process with a hard time bound (`symbolic`). The verdict is
undecided (`equal=None`) rather than wrong whenever the check cannot tell: prose,
different variable names, a time-out. Clearly different answers are never equal.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from fractions import Fraction

from gitswarm.referee.latex import clean, last_boxed
from gitswarm.referee.mathparse import ParseError, parse
from gitswarm.referee.structure import Coll, Interval, Labeled, Leaf, Node, Union, read
from gitswarm.referee.symbolic import SymbolicWorker

_ANSWER_LINE = re.compile(
    r"^\s*(?:[#>*_-]+\s*)?(?:\*\*|__)?\s*(?:final\s+answer|answer)\s*(?:\*\*|__)?\s*[:：]"
    r"\s*(?:\*\*|__)?(?P<rest>.*?)(?:\*\*|__)?\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
_FRAC = re.compile(r"(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}")
_MAX_MATCH = 12
_MAX_CHARS = 5_000


@dataclass(frozen=True)
class Verdict:
    """Whether an answer matches its key."""

    equal: bool | None
    """True or False when decided; None when the check could not tell."""
    method: str
    """How it was decided: exact, numeric, symbolic, set, tuple, interval, union, undecided."""
    detail: str
    """A short human-readable reason."""


def extract_answer(text: str) -> str | None:
    """The final answer of a solution text, by the convention in the module docstring."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        match = _ANSWER_LINE.match(lines[i])
        if match:
            rest = match.group("rest").strip()
            following = [ln.strip() for ln in lines[i + 1 :] if ln.strip()]
            return rest or (following[0] if following else None)
    return None


def equivalent(candidate: str, key: str, *, timeout: float = 5.0,
               worker: SymbolicWorker | None = None) -> Verdict:
    """Judge `candidate` against `key` within about `timeout` seconds (see module docstring)."""
    if max(len(candidate), len(key)) > _MAX_CHARS:
        return Verdict(None, "undecided", f"an answer longer than {_MAX_CHARS} characters")
    a, b = clean(candidate), clean(key)
    if not a or not b:
        return Verdict(False if a != b else None, "exact", "an empty answer")
    if _squash(a) == _squash(b):
        return Verdict(True, "exact", "the same after normalisation")
    judge = _Judge(worker or _default_worker(), time.monotonic() + timeout)
    verdict = judge.nodes(read(a), read(b))
    if verdict.equal is None:
        return Verdict(None, "undecided", verdict.detail)
    return verdict


@functools.cache
def _default_worker() -> SymbolicWorker:
    return SymbolicWorker()


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


class _Judge:
    """Compares shapes; collects at most one helper question per pair of leaves."""

    def __init__(self, worker: SymbolicWorker, deadline: float) -> None:
        self.worker = worker
        self.deadline = deadline
        self.memo: dict[tuple[str, str], Verdict] = {}

    def nodes(self, x: Node, y: Node) -> Verdict:
        if isinstance(x, Labeled) or isinstance(y, Labeled):
            return self.labeled(x, y)
        if isinstance(x, Union) or isinstance(y, Union):
            return self.unions(_parts(x), _parts(y))
        if isinstance(x, Interval) or isinstance(y, Interval):
            return self.intervals(x, y)
        if isinstance(x, Coll) or isinstance(y, Coll):
            return self.collections(_as_coll(x), _as_coll(y))
        return self.leaves(x.text, y.text)

    def labeled(self, x: Node, y: Node) -> Verdict:
        inner = self.nodes(_value(x), _value(y))
        if (isinstance(x, Labeled) and isinstance(y, Labeled) and _squash(x.label) != _squash(y.label)
                and inner.equal):
            return Verdict(None, "undecided", f"{x.label} and {y.label} are different names")
        return inner

    def unions(self, xs: tuple, ys: tuple) -> Verdict:
        if len(xs) != len(ys):
            return Verdict(None, "undecided", "unions of different numbers of parts")
        return self.unordered(xs, ys, "union")

    def intervals(self, x: Node, y: Node) -> Verdict:
        x, y = _as_interval(x), _as_interval(y)
        if not (isinstance(x, Interval) and isinstance(y, Interval)):
            other = y if isinstance(x, Interval) else x
            prose = isinstance(other, Leaf) and _is_prose(other.text)
            return Verdict(None if prose else False, "interval", "an interval against a non-interval")
        if (x.lo_closed, x.hi_closed) != (y.lo_closed, y.hi_closed):
            return Verdict(False, "interval", "ends open/closed differently")
        return _combine([self.nodes(x.lo, y.lo), self.nodes(x.hi, y.hi)], "interval")

    def collections(self, x: Coll, y: Coll) -> Verdict:
        if len(x.items) == 1 and len(y.items) == 1:
            return self.nodes(x.items[0], y.items[0])
        if "tuple" in (x.kind, y.kind):
            return self.tuples(x, y)
        if len(x.items) != len(y.items):
            prose = any(isinstance(i, Leaf) and _is_prose(i.text) for i in x.items + y.items)
            return Verdict(None if prose else False, "set", "different numbers of values")
        return self.unordered(x.items, y.items, "set")

    def tuples(self, x: Coll, y: Coll) -> Verdict:
        """Tuples match in order; a bare list may spell a tuple, a set never orders one."""
        if len(x.items) != len(y.items):
            return Verdict(False, "tuple", "different lengths")
        pairs = zip(x.items, y.items, strict=True)
        ordered = _combine([self.nodes(a, b) for a, b in pairs], "tuple")
        if x.kind == y.kind or (ordered.equal is True and "set" not in (x.kind, y.kind)):
            return ordered
        if ordered.equal is True:
            return Verdict(None, "undecided", "a tuple against a set of the same values")
        unordered = self.unordered(x.items, y.items, "tuple")
        return Verdict(False if unordered.equal is False else None,
                       "tuple" if unordered.equal is False else "undecided", "order differs")

    def unordered(self, xs: tuple, ys: tuple, method: str) -> Verdict:
        """A perfect matching of equal values decides equal; none even of maybe-equal, unequal."""
        if len(xs) != len(ys):
            return Verdict(False, method, "different numbers of values")
        if len(xs) > _MAX_MATCH:
            return self.large_sets(xs, ys, method)
        table = [[self.nodes(a, b).equal for b in ys] for a in xs]
        if _matching(table, lambda e: e is True):
            return Verdict(True, method, "the same values in some order")
        if not _matching(table, lambda e: e is not False):
            return Verdict(False, method, "some value has no equal partner")
        return Verdict(None, "undecided", "some values could not be compared")

    def large_sets(self, xs: tuple, ys: tuple, method: str) -> Verdict:
        keys = [sorted(_squash(getattr(i, "text", repr(i))) for i in s) for s in (xs, ys)]
        if keys[0] == keys[1]:
            return Verdict(True, method, "the same values in some order")
        fractions = [[f for i in s if (f := _fraction(getattr(i, "text", ""))) is not None] for s in (xs, ys)]
        if len(fractions[0]) == len(xs) and len(fractions[1]) == len(ys):
            equal = sorted(fractions[0]) == sorted(fractions[1])
            return Verdict(equal, method, "compared as exact numbers")
        return Verdict(None, "undecided", "too many values to match one by one")

    def leaves(self, a: str, b: str) -> Verdict:
        if (a, b) not in self.memo:
            self.memo[a, b] = self._leaf(a, b)
        return self.memo[a, b]

    def _leaf(self, a: str, b: str) -> Verdict:
        if _squash(a) == _squash(b):
            return Verdict(True, "exact", "the same after normalisation")
        fa, fb = _fraction(a), _fraction(b)
        if fa is not None and fb is not None:
            return Verdict(fa == fb, "numeric", f"{fa} {'=' if fa == fb else '!='} {fb}")
        if _is_prose(a) or _is_prose(b):
            same = _squash(a).lower() == _squash(b).lower()
            return Verdict(True if same else None, "exact" if same else "undecided",
                           "the same words" if same else "not a mathematical expression")
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return Verdict(None, "undecided", "out of time")
        decision = self.worker.compare(a, b, remaining)
        return Verdict(decision.equal, decision.method, decision.detail)


def _combine(verdicts: list[Verdict], method: str) -> Verdict:
    if any(v.equal is False for v in verdicts):
        bad = next(v for v in verdicts if v.equal is False)
        return Verdict(False, method, bad.detail)
    if all(v.equal for v in verdicts):
        return Verdict(True, method, "every part equal")
    return Verdict(None, "undecided", next(v.detail for v in verdicts if v.equal is None))


def _matching(table: list[list[bool | None]], ok) -> bool:
    """Whether rows and columns can be paired one-to-one along cells where `ok` holds."""
    owner: dict[int, int] = {}

    def place(row: int, seen: set[int]) -> bool:
        for col, cell in enumerate(table[row]):
            if ok(cell) and col not in seen:
                seen.add(col)
                if col not in owner or place(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    return all(place(row, set()) for row in range(len(table)))


def _fraction(text: str) -> Fraction | None:
    """The exact value of a plainly written number (`-12`, `0.75`, `3/4`, `-\\frac{3}{4}`)."""
    text = text.replace(" ", "")
    if _NUMBER.fullmatch(text):
        return Fraction(text)
    if (m := _FRAC.fullmatch(text)) and int(m.group(3)) != 0:
        value = Fraction(int(m.group(2)), int(m.group(3)))
        return -value if m.group(1) else value
    num, _, den = text.partition("/")
    if _NUMBER.fullmatch(num) and re.fullmatch(r"\d+", den) and int(den) != 0:
        return Fraction(num) / int(den)
    return None


def _is_prose(text: str) -> bool:
    try:
        parse(text)
    except (ParseError, RecursionError):
        return True
    return False


def _value(node: Node) -> Node:
    return node.value if isinstance(node, Labeled) else node


def _parts(node: Node) -> tuple:
    return node.parts if isinstance(node, Union) else (node,)


def _as_coll(node: Node) -> Coll:
    return node if isinstance(node, Coll) else Coll("list", (node,))


def _as_interval(node: Node) -> Node:
    """A pair in parentheses read as the open interval it may also mean."""
    if isinstance(node, Coll) and node.kind == "tuple" and len(node.items) == 2:
        lo, hi = node.items
        if isinstance(lo, Leaf) and isinstance(hi, Leaf):
            return Interval(lo, hi, False, False)
    return node
