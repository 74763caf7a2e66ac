def test_underflow(rpn):
    done = rpn("1", "+")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "rpn: stack underflow at '+'\n")


def test_underflow_of_dup_on_empty_stack(rpn):
    assert rpn("dup").stderr == "rpn: stack underflow at 'dup'\n"


def test_underflow_of_swap(rpn):
    assert rpn("1", "swap").stderr == "rpn: stack underflow at 'swap'\n"


def test_division_by_zero(rpn):
    done = rpn("1", "0", "/")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "rpn: division by zero\n")


def test_remainder_by_zero(rpn):
    assert rpn("1", "0", "%").stderr == "rpn: division by zero\n"


def test_negative_exponent(rpn):
    done = rpn("2", "-1", "^")
    assert (done.returncode, done.stderr) == (1, "rpn: negative exponent\n")


def test_unknown_token(rpn):
    done = rpn("1", "2", "plus")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "rpn: unknown token 'plus'\n")


def test_a_lone_minus_sign_is_subtraction(rpn):
    assert rpn("--", "5", "-").stderr == "rpn: stack underflow at '-'\n"


def test_error_stops_reading_input(rpn):
    done = rpn(stdin="1 1 +\n1 0 /\n2 2 +\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "2\n", "rpn: division by zero\n")


def test_stack_overflow(rpn):
    done = rpn(*["1"] * 1025)
    assert (done.returncode, done.stderr) == (1, "rpn: stack overflow\n")
    assert rpn(*["1"] * 1024, "sum").stdout == "1024\n"
