def reverse_words(s: str) -> str:
    """The words of s in reverse order, joined by single spaces."""
    return s
