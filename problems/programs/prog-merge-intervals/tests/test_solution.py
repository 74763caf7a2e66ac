import os
import random
import sys

sys.path.insert(0, os.getcwd())

from solution import merge_intervals  # noqa: E402


def brute(intervals):
    # Work on doubled coordinates so that [1, 2] and [3, 4] (gap 2..3) stay apart.
    points = sorted({x for a, b in intervals for x in range(2 * a, 2 * b + 1)})
    runs = []
    for x in points:
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return [(lo // 2, hi // 2) for lo, hi in runs]


def test_example():
    assert merge_intervals([(8, 10), (1, 3), (2, 6), (15, 18), (6, 7)]) == [(1, 7), (8, 10), (15, 18)]


def test_empty():
    assert merge_intervals([]) == []


def test_single():
    assert merge_intervals([(4, 4)]) == [(4, 4)]


def test_touching_merge():
    assert merge_intervals([(3, 5), (1, 3)]) == [(1, 5)]


def test_gap_stays_separate():
    assert merge_intervals([(3, 4), (1, 2)]) == [(1, 2), (3, 4)]


def test_nested_and_duplicates():
    assert merge_intervals([(1, 10), (2, 3), (2, 3), (10, 10), (4, 9)]) == [(1, 10)]


def test_negative_numbers():
    assert merge_intervals([(-5, -3), (-4, 0), (2, 2)]) == [(-5, 0), (2, 2)]


def test_returns_tuples():
    result = merge_intervals([(1, 2)])
    assert result == [(1, 2)] and all(isinstance(x, tuple) for x in result)


def test_input_not_modified():
    data = [(5, 6), (1, 2), (2, 3)]
    copy = list(data)
    merge_intervals(data)
    assert data == copy


def test_random_against_brute_force():
    rng = random.Random(2025)
    for _ in range(300):
        intervals = []
        for _ in range(rng.randint(0, 8)):
            a = rng.randint(-10, 10)
            intervals.append((a, a + rng.randint(0, 5)))
        assert merge_intervals(intervals) == brute(intervals), intervals
