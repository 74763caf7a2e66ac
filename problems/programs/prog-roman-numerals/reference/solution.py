_VALUES = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
_SYMBOLS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n: int) -> str:
    """The canonical Roman numeral of 1 <= n <= 3999; ValueError otherwise."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 3999:
        raise ValueError(f"cannot write {n!r} as a Roman numeral (1..3999 only)")
    parts = []
    for value, text in _VALUES:
        count, n = divmod(n, value)
        parts.append(text * count)
    return "".join(parts)


def from_roman(s: str) -> int:
    """The integer whose canonical Roman numeral is s; ValueError otherwise."""
    if not isinstance(s, str) or not s or any(ch not in _SYMBOLS for ch in s):
        raise ValueError(f"not a Roman numeral: {s!r}")
    total = 0
    for i, ch in enumerate(s):
        value = _SYMBOLS[ch]
        if i + 1 < len(s) and value < _SYMBOLS[s[i + 1]]:
            total -= value
        else:
            total += value
    if not 1 <= total <= 3999 or to_roman(total) != s:
        raise ValueError(f"not a canonical Roman numeral: {s!r}")
    return total
