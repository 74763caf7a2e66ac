import pytest

CASES = [
    ("add", ["2", "3", "+"], "5"),
    ("subtract", ["10", "4", "-"], "6"),
    ("subtract_below_zero", ["4", "10", "-"], "-6"),
    ("multiply", ["6", "7", "*"], "42"),
    ("divide", ["20", "4", "/"], "5"),
    ("divide_truncates", ["7", "2", "/"], "3"),
    ("divide_negative_truncates_toward_zero", ["-7", "2", "/"], "-3"),
    ("divide_by_negative", ["7", "-2", "/"], "-3"),
    ("remainder", ["10", "3", "%"], "1"),
    ("remainder_sign_of_dividend", ["-7", "2", "%"], "-1"),
    ("remainder_negative_divisor", ["7", "-2", "%"], "1"),
    ("power", ["2", "10", "^"], "1024"),
    ("power_zero_exponent", ["5", "0", "^"], "1"),
    ("zero_to_the_zero", ["0", "0", "^"], "1"),
    ("negative_base_power", ["-3", "3", "^"], "-27"),
    ("chained", ["2", "3", "+", "4", "*"], "20"),
    ("nested", ["1", "2", "3", "*", "+"], "7"),
    ("large_values", ["3000000000", "3", "*"], "9000000000"),
    ("negative_operands", ["-5", "-6", "*"], "30"),
    ("leading_zeros", ["007", "1", "+"], "8"),
]


@pytest.mark.parametrize(("args", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_operator(rpn, args, expected):
    done = rpn(*args)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected + "\n", "")


def test_one_quoted_expression_is_the_same_as_words(rpn):
    assert rpn("2 3 +").stdout == rpn("2", "3", "+").stdout == "5\n"


def test_tabs_separate_tokens(rpn):
    assert rpn("2\t3\t*").stdout == "6\n"
