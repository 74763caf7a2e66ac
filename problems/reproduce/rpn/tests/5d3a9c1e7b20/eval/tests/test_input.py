def test_each_line_is_an_expression(rpn):
    done = rpn(stdin="1 2 +\n10 3 %\n")
    assert (done.returncode, done.stdout) == (0, "3\n1\n")


def test_each_line_starts_with_an_empty_stack(rpn):
    assert rpn(stdin="1 2\n+\n").stderr == "rpn: stack underflow at '+'\n"


def test_blank_lines_print_nothing(rpn):
    assert rpn(stdin="1\n\n   \n2\n").stdout == "1\n2\n"


def test_last_line_without_newline(rpn):
    assert rpn(stdin="6 7 *").stdout == "42\n"


def test_empty_input_prints_nothing_and_succeeds(rpn):
    done = rpn(stdin="")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert rpn("-p", stdin="5\n").stdout == "5\n"


def test_arguments_win_over_stdin(rpn):
    assert rpn("1", "1", "+", stdin="5 5 +\n").stdout == "2\n"


def test_windows_line_endings(rpn):
    assert rpn(stdin="2 2 +\r\n").stdout == "4\n"
