from itertools import groupby


def encode(s: str) -> str:
    """Run-length encode s, e.g. "aaab" -> "3a1b"."""
    return "".join(f"{len(list(group))}{ch}" for ch, group in groupby(s))


def decode(s: str) -> str:
    """Invert encode; ValueError on malformed input."""
    out = []
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] in "0123456789":
            j += 1
        if j == i:
            raise ValueError(f"expected a count at position {i}")
        if s[i] == "0":
            raise ValueError(f"count at position {i} is zero or has a leading zero")
        if j == len(s):
            raise ValueError("count without a character at the end")
        out.append(s[j] * int(s[i:j]))
        i = j + 1
    return "".join(out)
