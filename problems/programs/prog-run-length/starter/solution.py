def encode(s: str) -> str:
    """Run-length encode s, e.g. "aaab" -> "3a1b"."""
    raise NotImplementedError


def decode(s: str) -> str:
    """Invert encode; ValueError on malformed input."""
    raise NotImplementedError
