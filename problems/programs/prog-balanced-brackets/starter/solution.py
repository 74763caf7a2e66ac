def is_balanced(s: str) -> bool:
    """Whether the brackets (), [] and {} in s are balanced."""
    return True
