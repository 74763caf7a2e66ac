def test_lines_without_the_delimiter_are_printed_whole(fcut):
    done = fcut("-d:", "-f2", stdin="a:b\nplain line\nc:d\n")
    assert (done.returncode, done.stdout) == (0, "b\nplain line\nd\n")


def test_s_leaves_out_lines_without_the_delimiter(fcut):
    assert fcut("-s", "-d:", "-f2", stdin="a:b\nplain line\n\nc:d\n").stdout == "b\nd\n"


def test_s_keeps_lines_whose_selected_fields_are_missing(fcut):
    assert fcut("-s", "-d:", "-f3", stdin="a:b\n").stdout == "\n"


def test_output_delimiter(fcut):
    assert fcut("-d,", "-f", "1-3", "-o", " | ", stdin="a,b,c,d\n").stdout == "a | b | c\n"


def test_empty_output_delimiter(fcut):
    assert fcut("-d,", "-f1,3", "-o", "", stdin="a,b,c\n").stdout == "ac\n"


def test_output_delimiter_does_not_touch_whole_lines(fcut):
    assert fcut("-d,", "-f1", "-o;", stdin="a b\n").stdout == "a b\n"


def test_attached_and_separate_values(fcut):
    assert fcut("-d", ":", "-f", "2", stdin="x:y\n").stdout == fcut("-d:", "-f2", stdin="x:y\n").stdout == "y\n"


def test_combined_letters(fcut):
    assert fcut("-sd:", "-f2", stdin="a:b\nplain\n").stdout == "b\n"
    assert fcut("-d,", "-sf1", stdin="a,b\nplain\n").stdout == "a\n"


def test_last_option_counts(fcut):
    assert fcut("-d,", "-d:", "-f1", "-f2", stdin="a,b:c\n").stdout == "c\n"


def test_help(fcut):
    done = fcut("--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: fcut -f LIST [-d DELIM] [-o STRING] [-s] [FILE...]\n")


def test_short_help_is_the_same(fcut):
    assert fcut("-h").stdout == fcut("--help").stdout != ""


def test_version(fcut):
    done = fcut("--version")
    assert (done.returncode, done.stdout) == (0, "fcut 1.0\n")
