"""Decide whether two expressions are equal with sympy, in a helper process with a hard bound.

sympy can run for minutes (or exhaust memory) on an unlucky input, and a thread cannot be
stopped, so every comparison runs in a long-lived helper process (`python -m
gitswarm.referee.symbolic`, one JSON line per question) that is killed and replaced when
a question outlives its time. Starting the helper costs one sympy import (~1 s), paid once.

The decision, for expressions already parsed by `mathparse` (never `eval`):
identical trees, or exact rationals, decide at once; otherwise both sides are evaluated to
50 digits at the same points (one point for constants, six positive points for variables).
A clear difference anywhere means unequal. Agreement means equal for constants and for
algebraic expressions (a polynomial-identity argument); with floor, ceiling, factorials or
absolute values only a symbolic proof (`simplify(a - b) == 0`) counts.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gitswarm.referee.mathparse import ParseError, Tree, parse

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
_STARTUP_SECONDS = 60.0
_DIGITS = 50
_DISCONTINUOUS = ("floor", "ceiling", "Abs", "factorial", "factorial2", "binomial")


@dataclass(frozen=True)
class Decision:
    """The helper's answer: equal (None when undecided), how it decided, and why."""

    equal: bool | None
    method: str
    detail: str


class SymbolicWorker:
    """The helper process; thread-safe (one question at a time), restarted after a timeout."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    def compare(self, a: str, b: str, timeout: float) -> Decision:
        """Decide whether cleaned expressions `a` and `b` are equal within `timeout` seconds
        (plus, once, the helper's start)."""
        if not self._lock.acquire(timeout=max(timeout, 0.0)):
            return Decision(None, "undecided", "symbolic check busy past the time limit")
        try:
            proc = self._started()  # a first start (one sympy import) is not timed
            deadline = time.monotonic() + timeout
            assert proc.stdin is not None  # started with stdin=PIPE
            proc.stdin.write(json.dumps({"a": a, "b": b}).encode() + b"\n")
            proc.stdin.flush()
            line = _read_line(proc, deadline)
            if line is None:
                self.close()
                return Decision(None, "undecided", f"symbolic check exceeded {timeout:.1f} s")
            return Decision(**json.loads(line))
        except (OSError, ValueError) as exc:  # the helper died (e.g. out of memory)
            self.close()
            return Decision(None, "undecided", f"symbolic check failed: {exc}")
        finally:
            self._lock.release()

    def close(self) -> None:
        """Stop the helper (a later question starts a new one)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
            self._proc = None

    def _started(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "gitswarm.referee.symbolic"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        if _read_line(self._proc, time.monotonic() + _STARTUP_SECONDS) != "ready":
            self.close()
            raise OSError("the symbolic helper did not start")
        return self._proc


def _read_line(proc: subprocess.Popen[bytes], deadline: float) -> str | None:
    """One line from the helper, or None at the deadline (EOF raises OSError)."""
    assert proc.stdout is not None  # started with stdout=PIPE
    fd = proc.stdout.fileno()
    data = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise OSError("the symbolic helper exited")
            data += chunk
    return data.decode().strip()


# ---- inside the helper process ----------------------------------------------------------


def decide(a_text: str, b_text: str) -> Decision:
    """Compare two cleaned expressions (runs in the helper; imports sympy)."""
    try:
        a, b = to_sympy(parse(a_text)), to_sympy(parse(b_text))
    except (ParseError, ValueError, TypeError, ArithmeticError, RecursionError) as exc:
        return Decision(None, "undecided", f"cannot read as mathematics: {exc}")
    if a == b:
        return Decision(True, "symbolic", "identical after parsing")
    if a.is_Rational and b.is_Rational:
        return Decision(False, "numeric", f"{a} != {b}")
    if bool(a.free_symbols) != bool(b.free_symbols):
        return Decision(False, "symbolic", "a constant against an expression in variables")
    if a.free_symbols != b.free_symbols:
        return Decision(None, "undecided", "the two use different variables")
    return _by_values(a, b)


def _by_values(a, b) -> Decision:
    import sympy

    symbols = sorted(a.free_symbols, key=str)
    agree = 0
    for point in _points(symbols):
        va, vb = _value(a, point), _value(b, point)
        if va is None or vb is None:
            continue
        if _differ(va, vb):
            where = ", ".join(f"{s}={v}" for s, v in point.items()) or "the constant"
            return Decision(False, "numeric",
                            f"differ at {where}: {sympy.N(va, 8)} vs {sympy.N(vb, 8)}")
        agree += 1
    if agree == 0:
        return Decision(None, "undecided", "could not evaluate either side")
    if sympy.expand(a - b) == 0:
        return Decision(True, "symbolic", "the difference expands to 0")
    jumpy = any(a.atoms(getattr(sympy, f)) or b.atoms(getattr(sympy, f)) for f in _DISCONTINUOUS)
    if not jumpy and (not symbols or agree >= 4):
        return Decision(True, "numeric", f"equal to 25 digits at {agree} point(s)")
    if sympy.simplify(a - b) == 0:
        return Decision(True, "symbolic", "the difference simplifies to 0")
    if not symbols:
        return Decision(True, "numeric", "equal to 25 digits")
    return Decision(None, "undecided", "equal at sample points only")


def _differ(va, vb) -> bool:
    import sympy

    if va.is_infinite or vb.is_infinite:
        return va != vb
    return bool(abs(va - vb) > sympy.Float(10) ** -25 * max(1, abs(va), abs(vb)))


def _points(symbols: list) -> list[dict]:
    """Where to evaluate: positive values (variables in answers are mostly positive)."""
    import sympy

    if not symbols:
        return [{}]
    rng = random.Random(20260)
    points = []
    for i in range(6):
        values = [sympy.Integer(rng.randint(2, 40)) if i % 2 else
                  sympy.Rational(rng.randint(3, 97), rng.randint(2, 11)) for _ in symbols]
        points.append(dict(zip(symbols, values, strict=True)))
    return points


def _value(expr, point: dict):
    """The value at `point` to 50 digits (complex allowed, ±oo kept), or None if undefined."""
    import sympy

    value = sympy.N(expr.subs(point), _DIGITS)
    if value in (sympy.oo, -sympy.oo):
        return value
    if not value.is_number or value.has(sympy.nan, sympy.zoo) or not value.is_finite:
        return None
    return value


def to_sympy(tree: Tree):
    """The sympy object of a `mathparse` tree (exact rationals, no floats)."""
    import sympy

    kind = tree[0]
    if kind == "num":
        return sympy.Rational(tree[1])
    if kind == "sym":
        return sympy.Symbol(tree[1])
    if kind == "const":
        return {"pi": sympy.pi, "E": sympy.E, "oo": sympy.oo}[tree[1]]
    if kind == "neg":
        return -to_sympy(tree[1])
    if kind == "call":
        return _call(tree[1], [to_sympy(t) for t in tree[2:]])
    a, b = to_sympy(tree[1]), to_sympy(tree[2])
    if kind == "^":
        if b.is_Integer and abs(b) > 100_000 and a.is_number and abs(a) != 1 and a != 0:
            raise ValueError("power too large to evaluate")
        return a**b
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    return a * b if kind == "*" else a / b


def _call(name: str, args: list):
    import sympy

    if name in ("factorial", "factorial2") and args[0].is_Integer and args[0] > 20_000:
        raise ValueError("factorial too large to evaluate")
    if name == "root":
        return sympy.root(args[0], args[1])
    return getattr(sympy, name)(*args)


def _serve() -> None:
    """The helper's loop: one JSON question per line in, one `Decision` per line out."""
    import resource

    import sympy  # noqa: F401 - loaded before "ready" so questions are timed fairly

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    parent = os.getppid()
    # The helper must not outlive gitswarm, even when a question keeps it from reading stdin.
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:
        question = json.loads(line)
        try:
            decision = decide(question["a"], question["b"])
        except Exception as exc:  # a process boundary: report the failure, keep serving
            decision = Decision(None, "undecided", f"symbolic check failed: {exc!r}")
        print(json.dumps(decision.__dict__), flush=True)


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


if __name__ == "__main__":
    _serve()
