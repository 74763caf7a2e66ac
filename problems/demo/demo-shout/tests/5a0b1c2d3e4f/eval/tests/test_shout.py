def test_upper_cases_standard_input(shout):
    assert shout(stdin="hello, World 42\n") == (0, "HELLO, WORLD 42\n", "")


def test_keeps_other_bytes(shout):
    assert shout(stdin="\u00e9t\u00e9 a-z\tq\n") == (0, "\u00e9T\u00e9 A-Z\tQ\n", "")


def test_long_option_is_unknown(shout):
    assert shout("--number", stdin="a\n") == (2, "", "shout: unknown option '--number'\n")


def test_reads_a_file(shout):
    assert shout("in.txt", files={"in.txt": "one\ntwo\n"}) == (0, "ONE\nTWO\n", "")


def test_numbers_lines(shout):
    assert shout("-n", stdin="a\nb\n") == (0, "     1\tA\n     2\tB\n", "")


def test_numbers_a_last_line_without_newline(shout):
    assert shout("-n", stdin="a\nb") == (0, "     1\tA\n     2\tB", "")


def test_numbers_a_file(shout):
    assert shout("-n", "in.txt", files={"in.txt": "x\n"}) == (0, "     1\tX\n", "")


def test_unknown_option(shout):
    assert shout("-x", stdin="a\n") == (2, "", "shout: unknown option '-x'\n")


def test_two_files(shout):
    assert shout("a", "b") == (2, "", "shout: at most one file\n")


def test_missing_file(shout):
    assert shout("nope.txt") == (1, "", "shout: cannot open 'nope.txt'\n")
