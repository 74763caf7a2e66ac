def test_dup(rpn):
    assert rpn("4", "dup", "*").stdout == "16\n"


def test_swap(rpn):
    assert rpn("1", "2", "swap", "-").stdout == "1\n"


def test_drop(rpn):
    assert rpn("1", "2", "drop").stdout == "1\n"


def test_drop_to_empty_prints_nothing(rpn):
    done = rpn("1", "drop")
    assert (done.returncode, done.stdout) == (0, "")
    assert rpn("1", "drop", "5").stdout == "5\n"


def test_neg(rpn):
    assert rpn("5", "neg").stdout == "-5\n"


def test_abs(rpn):
    assert rpn("-9", "abs").stdout == "9\n"


def test_sum(rpn):
    assert rpn("1", "2", "3", "4", "sum").stdout == "10\n"


def test_sum_of_empty_stack_is_zero(rpn):
    assert rpn("sum").stdout == "0\n"


def test_only_the_top_is_printed(rpn):
    assert rpn("1", "2", "3").stdout == "3\n"


def test_print_whole_stack(rpn):
    assert rpn("-p", "1", "2", "3", "swap").stdout == "1 3 2\n"


def test_print_whole_stack_of_one(rpn):
    assert rpn("-p", "7").stdout == "7\n"


def test_print_whole_stack_from_stdin(rpn):
    assert rpn("-p", stdin="1 2\n3\n").stdout == "1 2\n3\n"
