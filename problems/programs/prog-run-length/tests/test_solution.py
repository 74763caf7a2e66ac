import os
import random
import sys

import pytest

sys.path.insert(0, os.getcwd())

from solution import decode, encode  # noqa: E402


@pytest.mark.parametrize("plain,coded", [
    ("", ""),
    ("a", "1a"),
    ("aaab", "3a1b"),
    ("aaabccddddddddddd", "3a1b2c11d"),
    ("abc", "1a1b1c"),
    ("  !!", "2 2!"),
    ("x" * 120, "120x"),
    ("aabba", "2a2b1a"),
])
def test_encode_and_decode(plain, coded):
    assert encode(plain) == coded
    assert decode(coded) == plain


def test_decode_non_maximal_pieces():
    assert decode("2a3a") == "aaaaa"
    assert decode("1a1a1b") == "aab"


@pytest.mark.parametrize("bad", ["a", "3", "3a4", "0a", "03a", "ab", "2a b", "1"])
def test_decode_rejects(bad):
    with pytest.raises(ValueError):
        decode(bad)


def test_round_trip_random():
    rng = random.Random(11)
    alphabet = "ab c!\u00e9"
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert decode(encode(text)) == text
