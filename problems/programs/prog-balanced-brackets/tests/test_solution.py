import os
import sys

import pytest

sys.path.insert(0, os.getcwd())

from solution import is_balanced  # noqa: E402


@pytest.mark.parametrize("text", [
    "", "()", "[]", "{}", "()[]{}", "([{}])", "a(b[c]{d}e)f", "no brackets at all",
    "{[()()]}[]", "((((((((((()))))))))))", "x = f(a[i], {k: v})",
])
def test_balanced(text):
    assert is_balanced(text) is True


@pytest.mark.parametrize("text", [
    "(", ")", "((", "))", "([)]", "(]", "{)", "())(", "[[]", "}{", "a)b(c",
    "{[}]", "(((())))))", "([]{}",
])
def test_unbalanced(text):
    assert is_balanced(text) is False


def test_long_input():
    n = 500_000
    assert is_balanced("(" * n + ")" * n) is True
    assert is_balanced("(" * n + ")" * (n - 1)) is False
    assert is_balanced("[" * n + ")" + "]" * (n - 1)) is False
