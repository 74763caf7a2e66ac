def test_help(rpn):
    done = rpn("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: rpn [-p] [EXPRESSION...]\n")


def test_short_help_is_the_same(rpn):
    assert rpn("-h").stdout == rpn("--help").stdout != ""


def test_version(rpn):
    done = rpn("--version")
    assert (done.returncode, done.stdout) == (0, "rpn 1.0\n")


def test_unknown_option(rpn):
    done = rpn("-x", "1")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "rpn: unknown option '-x'\n")


def test_negative_number_is_not_an_option(rpn):
    assert rpn("-3", "4", "+").stdout == "1\n"


def test_double_dash_ends_options(rpn):
    assert rpn("--", "-p").stderr == "rpn: unknown token '-p'\n"


def test_options_only_before_the_expression(rpn):
    assert rpn("1", "-p").stderr == "rpn: unknown token '-p'\n"
