def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the union of closed integer intervals as sorted disjoint intervals."""
    raise NotImplementedError
