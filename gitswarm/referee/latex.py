"""Normalise how an answer is written (TeX cosmetics, units, prefixes) without changing it.

`clean` maps the many spellings of one answer to one string: `$\\dfrac{1}{2}$.`,
`\\boxed{\\frac12}` and `Answer: \\frac{1}{2}` all become `\\frac{1}{2}` (spacing aside).
It never evaluates anything; equivalence is decided elsewhere.
"""

from __future__ import annotations

import re

UNITS = frozenset({
    "cm", "m", "km", "mm", "meter", "meters", "metre", "metres", "unit", "units",
    "square units", "sq units", "degree", "degrees", "deg", "cm^2", "m^2", "second",
    "seconds", "s", "minutes", "hours", "dollars", "cents",
})
_PREFIX = re.compile(
    r"^\s*(?:\*\*|__)?\s*(?:the\s+)?(?:final\s+answer|answer)\s*(?:\*\*|__)?\s*"
    r"(?:is\b\s*[:：]?|[:：])\s*(?:\*\*|__)?\s*", re.IGNORECASE)
_UNICODE = {
    "−": "-", "–": "-", "—": "-", "π": r"\pi ", "√": r"\sqrt ", "∞": r"\infty ", "·": "*",
    "×": "*", "≤": r"\le ", "≥": r"\ge ", "≠": r"\ne ", "∈": r"\in ", "∪": r"\cup ",
    "…": r"\ldots ", "°": "", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}
_WRAPPERS = ("boxed", "fbox", "text", "textbf", "textit", "textrm", "mathrm", "mathbf",
             "mathit", "operatorname", "mbox")
_REWRITES = [
    (r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg)(?![a-zA-Z])\.?", ""),
    (r"\\[dt]frac(?![a-zA-Z])", r"\\frac"),
    (r"\\[dt]binom(?![a-zA-Z])", r"\\binom"),
    (r"\\(?:displaystyle|limits|nolimits)(?![a-zA-Z])", ""),
    (r"\\(?:,|;|:|!| |quad|qquad)(?![a-zA-Z])|~", " "),
    (r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![a-zA-Z])", ""),
    (r"\\(?:leqslant|leq|le)(?![a-zA-Z])", r"\\le "),
    (r"\\(?:geqslant|geq|ge)(?![a-zA-Z])", r"\\ge "),
    (r"\\(?:neq|ne)(?![a-zA-Z])", r"\\ne "),
    (r"\\(?:times|cdot)(?![a-zA-Z])|\*", r"\\cdot "),
    (r"\\(?:ldots|cdots|dots|dotsc|dotsb)(?![a-zA-Z])|\.\.\.", r"\\ldots "),
    (r"\\(?:varepsilon)(?![a-zA-Z])", r"\\epsilon "),
    (r"\\%", "%"),
    (r"(?<=\d)\{,\}(?=\d)", ""),
    (r"\+\s*\\infty", r"\\infty"),
]


def clean(text: str) -> str:
    """The canonical spelling of one answer (see the module docstring)."""
    s = text.strip()
    for old, new in _UNICODE.items():
        s = s.replace(old, new)
    s = _PREFIX.sub("", s, count=1)
    s = re.sub(r"\\\[|\\\]|\\\(|\\\)|\$", " ", s)
    for pattern, repl in _REWRITES:
        s = re.sub(pattern, repl, s)
    s = unwrap_commands(s)
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s*([{}()\[\],^_=+])\s*", r"\1", s)
    s = s.rstrip(" .;")
    return _join_thousands(s)


def unwrap_commands(s: str) -> str:
    """Replace `\\text{...}`-like wrappers by their content; drop unit names entirely."""
    pattern = re.compile(r"\\(" + "|".join(_WRAPPERS) + r")\s*\{")
    while match := pattern.search(s):
        close = matching_brace(s, match.end() - 1)
        if close is None:
            return s[: match.start()] + s[match.end() :]
        inner = s[match.end() : close]
        if match.group(1).startswith("text") and inner.strip().lower() in UNITS:
            inner = ""
        s = s[: match.start()] + " " + inner + " " + s[close + 1 :]
    return _strip_trailing_unit(s)


def _strip_trailing_unit(s: str) -> str:
    words = s.rstrip(" .").rsplit(" ", 2)
    for n in (2, 1):
        if len(words) > n and " ".join(words[-n:]).lower() in UNITS and len(words[-1]) > 1:
            head = " ".join(words[:-n])
            if re.search(r"[\d})]\s*$", head):
                return head
    return s


def _join_thousands(s: str) -> str:
    """`1,000,000` and `1 000` are one number, not a list (only for the whole answer)."""
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d{1,3}(?: \d{3})+", s):
        return s.replace(",", "").replace(" ", "")
    return s


def matching_brace(s: str, open_at: int) -> int | None:
    """Index of the bracket closing the one at `open_at` (same kind, nesting-aware)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    opener = s[open_at]
    closer = pairs[opener]
    depth = 0
    for i in range(open_at, len(s)):
        if s[i] == opener and (i == 0 or s[i - 1] != "\\" or opener != "{"):
            depth += 1
        elif s[i] == closer and (i == 0 or s[i - 1] != "\\" or closer != "}"):
            depth -= 1
            if depth == 0:
                return i
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (or `\\fbox{...}`) with balanced braces."""
    for match in reversed(list(re.finditer(r"\\(?:boxed|fbox)\s*\{", text))):
        close = matching_brace(text, match.end() - 1)
        if close is not None:
            return text[match.end() : close]
    return None


def split_top(s: str, separators: tuple[str, ...]) -> list[str]:
    """Split at separators that are outside every bracket (`\\{`, `{`, `(`, `[`)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        if s.startswith(("\\{", "\\}"), i):
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if s[i] in "{([":
            depth += 1
        elif s[i] in "})]":
            depth -= 1
        elif depth == 0 and (sep := next((x for x in separators if s.startswith(x, i)), None)):
            parts.append(s[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]
