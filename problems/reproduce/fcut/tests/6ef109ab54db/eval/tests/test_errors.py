import pytest


def test_no_field_list(fcut):
    done = fcut("-d:", stdin="a:b\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "fcut: no field list (use -f LIST)\n")


@pytest.mark.parametrize("fields", ["0", "1,,2", "1,", "5-3", "-", "a", "1-2-3", "", "2 3", "0-2"],
                         ids=["zero", "empty_item", "trailing_comma", "decreasing_range", "lone_dash",
                              "letter", "double_range", "empty", "space", "range_from_zero"])
def test_invalid_field_list(fcut, fields):
    done = fcut("-d:", "-f", fields, stdin="a:b\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"fcut: invalid field list '{fields}'\n")


def test_delimiter_of_two_characters(fcut):
    done = fcut("-d", "::", "-f1", stdin="a::b\n")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "fcut: the delimiter must be a single character, not '::'\n")


def test_empty_delimiter(fcut):
    done = fcut("-d", "", "-f1", stdin="a\n")
    assert (done.returncode, done.stderr) == (2, "fcut: the delimiter must be a single character, not ''\n")


def test_option_without_its_argument(fcut):
    done = fcut("-d:", "-f")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "fcut: option '-f' needs an argument\n")
    assert fcut("-f1", "-d").stderr == "fcut: option '-d' needs an argument\n"


def test_unknown_option(fcut):
    done = fcut("-x", "-f1", stdin="a\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "fcut: unknown option '-x'\n")


def test_unknown_long_option(fcut):
    done = fcut("--fields=1", stdin="a\n")
    assert (done.returncode, done.stderr) == (2, "fcut: unknown option '--fields=1'\n")


def test_first_error_from_the_left(fcut):
    assert fcut("-d", "ab", "-q", "-f0").stderr == "fcut: the delimiter must be a single character, not 'ab'\n"
    assert fcut("-f0", "-q").stderr == "fcut: unknown option '-q'\n"


def test_only_the_last_list_is_checked(fcut):
    assert fcut("-d:", "-f0", "-f2", stdin="a:b\n").stdout == "b\n"


def test_bad_list_reads_no_file(fcut):
    done = fcut("-f", "x", "missing.txt")
    assert (done.returncode, done.stderr) == (2, "fcut: invalid field list 'x'\n")
