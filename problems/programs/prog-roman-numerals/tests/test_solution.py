import os
import sys

import pytest

sys.path.insert(0, os.getcwd())

from solution import from_roman, to_roman  # noqa: E402

KNOWN = {
    1: "I", 3: "III", 4: "IV", 5: "V", 9: "IX", 14: "XIV", 40: "XL", 44: "XLIV",
    90: "XC", 99: "XCIX", 400: "CD", 444: "CDXLIV", 500: "D", 900: "CM",
    1000: "M", 1994: "MCMXCIV", 2025: "MMXXV", 3888: "MMMDCCCLXXXVIII",
    3999: "MMMCMXCIX",
}


@pytest.mark.parametrize("n,text", sorted(KNOWN.items()))
def test_to_roman_known(n, text):
    assert to_roman(n) == text


@pytest.mark.parametrize("n,text", sorted(KNOWN.items()))
def test_from_roman_known(n, text):
    assert from_roman(text) == n


def test_round_trip_all():
    seen = set()
    for n in range(1, 4000):
        text = to_roman(n)
        assert from_roman(text) == n
        seen.add(text)
    assert len(seen) == 3999


@pytest.mark.parametrize("n", [0, -1, 4000, 10**6])
def test_to_roman_out_of_range(n):
    with pytest.raises(ValueError):
        to_roman(n)


@pytest.mark.parametrize("text", ["", "IIII", "IC", "VX", "MMMM", "iv", "X1", "IIV", "XM", "VV", "LL", "CMM", " X"])
def test_from_roman_rejects(text):
    with pytest.raises(ValueError):
        from_roman(text)
