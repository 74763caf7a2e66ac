import pytest


def test_undefined_name(stencil):
    done = stencil(stdin="Dear {{name}}\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "stencil: undefined name 'name' on line 1\n")


def test_undefined_name_reports_its_line_and_prints_nothing(stencil):
    done = stencil("a=1", stdin="{{a}}\nfine\n\nx {{ b }} {{c}}\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "stencil: undefined name 'b' on line 4\n")


def test_escaped_name_is_not_undefined(stencil):
    assert stencil(stdin="\\{{nothing}}\n").returncode == 0 == len(stencil(stdin="\\{{nothing}}\n").stderr)
    assert stencil(stdin="\\{{nothing}}\n").stdout == "{{nothing}}\n"


@pytest.mark.parametrize("word", ["novalue", "=v", "2x=1", "a-b=1", "a b=1"],
                         ids=["no_equals", "empty_name", "digit_first", "dash_in_name", "space_in_name"])
def test_invalid_assignment(stencil, word):
    done = stencil(word, stdin="x\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"stencil: invalid assignment '{word}'\n")


def test_unknown_option(stencil):
    done = stencil("-x", stdin="x\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "stencil: unknown option '-x'\n")
    assert stencil("--stricter", stdin="x\n").stderr == "stencil: unknown option '--stricter'\n"


def test_option_without_its_argument(stencil):
    done = stencil("a=1", "-f")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "stencil: option '-f' needs an argument\n")
    assert stencil("-t").stderr == "stencil: option '-t' needs an argument\n"


def test_first_invocation_error_from_the_left(stencil):
    assert stencil("bad", "-q", stdin="x\n").stderr == "stencil: invalid assignment 'bad'\n"
    assert stencil("-q", "bad", stdin="x\n").stderr == "stencil: unknown option '-q'\n"


def test_invocation_error_before_template_errors(stencil):
    done = stencil("bad", stdin="{{undefined}}\n")
    assert (done.returncode, done.stderr) == (2, "stencil: invalid assignment 'bad'\n")


def test_help(stencil):
    done = stencil("--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: stencil [--strict] [-f FILE]... [-t TEMPLATE] [NAME=VALUE]...\n")


def test_short_help_is_the_same(stencil):
    assert stencil("-h").stdout == stencil("--help").stdout != ""


def test_version(stencil):
    done = stencil("--version")
    assert (done.returncode, done.stdout) == (0, "stencil 1.0\n")
