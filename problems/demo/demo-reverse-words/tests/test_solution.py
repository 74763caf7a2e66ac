import os
import sys

import pytest

sys.path.insert(0, os.getcwd())

from solution import reverse_words  # noqa: E402


@pytest.mark.parametrize("text,expected", [
    ("the sky is blue", "blue is sky the"),
    ("  the sky  is blue ", "blue is sky the"),
    ("hello", "hello"),
    ("", ""),
    ("   ", ""),
    ("a b", "b a"),
    ("tabs\tand\nnewlines", "newlines and tabs"),
    ("punctuation, stays! attached.", "attached. stays! punctuation,"),
])
def test_reverse_words(text, expected):
    assert reverse_words(text) == expected
