def to_roman(n: int) -> str:
    """The canonical Roman numeral of 1 <= n <= 3999; ValueError otherwise."""
    raise NotImplementedError


def from_roman(s: str) -> int:
    """The integer whose canonical Roman numeral is s; ValueError otherwise."""
    raise NotImplementedError
