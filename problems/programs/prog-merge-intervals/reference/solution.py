def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the union of closed integer intervals as sorted disjoint intervals."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged
