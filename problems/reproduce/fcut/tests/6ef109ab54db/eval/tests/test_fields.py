import pytest

LINE = "a:b:c:d:e\n"


@pytest.mark.parametrize("fields, expected", [
    ("1", "a\n"),
    ("3", "c\n"),
    ("1,3", "a:c\n"),
    ("2-4", "b:c:d\n"),
    ("1,3-5", "a:c:d:e\n"),
    ("4-", "d:e\n"),
    ("-2", "a:b\n"),
    ("5,1", "a:e\n"),
    ("2,2,2", "b\n"),
    ("1-3,2-4", "a:b:c:d\n"),
    ("3-3", "c\n"),
    ("-1,5-", "a:e\n"),
    ("007", "\n"),
    ("6", "\n"),
    ("4-9", "d:e\n"),
], ids=["first", "middle", "list", "range", "list_and_range", "open_end", "open_start",
        "order_of_the_line", "repeated", "overlapping", "single_range", "both_open",
        "leading_zeros_beyond_the_end", "beyond_the_last_field", "range_past_the_end"])
def test_field_list(fcut, fields, expected):
    done = fcut("-d:", "-f", fields, stdin=LINE)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


def test_tab_is_the_default_delimiter(fcut):
    assert fcut("-f", "2", stdin="one\ttwo\tthree\n").stdout == "two\n"


def test_default_output_delimiter_is_a_tab(fcut):
    assert fcut("-f", "1,3", stdin="one\ttwo\tthree\n").stdout == "one\tthree\n"


def test_empty_fields(fcut):
    assert fcut("-d:", "-f", "2,3", stdin="a::c\n").stdout == ":c\n"
    assert fcut("-d:", "-f", "1", stdin=":x\n").stdout == "\n"


def test_each_line_separately(fcut):
    assert fcut("-d,", "-f2", stdin="1,2,3\n4,5\n6,,7\n").stdout == "2\n5\n\n"


def test_last_line_without_newline(fcut):
    assert fcut("-d,", "-f1", stdin="a,b\nc,d").stdout == "a\nc\n"


def test_blank_line_is_kept(fcut):
    assert fcut("-d,", "-f1", stdin="a,b\n\nc,d\n").stdout == "a\n\nc\n"


def test_carriage_return_belongs_to_the_last_field(fcut):
    assert fcut("-d,", "-f2", stdin="a,b\r\n").stdout == "b\r\n"


def test_space_delimiter(fcut):
    assert fcut("-d", " ", "-f", "2", stdin="x  y z\n").stdout == "\n"


def test_long_line(fcut):
    line = ",".join(str(i) for i in range(1, 5001)) + "\n"
    assert fcut("-d,", "-f", "4999-", stdin=line).stdout == "4999,5000\n"
