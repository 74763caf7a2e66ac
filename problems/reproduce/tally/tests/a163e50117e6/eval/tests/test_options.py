import pytest

TEXT = "one two\nthree four five\n"


@pytest.mark.parametrize("flags, expected", [
    (["-l"], "2\n"),
    (["-w"], "5\n"),
    (["-c"], "24\n"),
    (["-l", "-w"], "2 5\n"),
    (["-lw"], "2 5\n"),
    (["-wl"], "2 5\n"),
    (["-cl"], "2 24\n"),
    (["-w", "-c"], "5 24\n"),
    (["-lwc"], "2 5 24\n"),
    (["-c", "-w", "-l"], "2 5 24\n"),
    (["-ll"], "2\n"),
], ids=["lines", "words", "bytes", "lines_words", "combined", "combined_reversed",
        "order_is_fixed", "words_bytes", "all_three", "all_three_separately", "repeated"])
def test_selected_counts(tally, flags, expected):
    done = tally(*flags, stdin=TEXT)
    assert (done.returncode, done.stdout) == (0, expected)


def test_flags_apply_to_files(tally):
    assert tally("-w", "a.txt", files={"a.txt": TEXT}).stdout == "5 a.txt\n"


def test_help(tally):
    done = tally("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: tally [-l] [-w] [-c] [FILE...]\n")


def test_short_help_is_the_same(tally):
    assert tally("-h").stdout == tally("--help").stdout != ""


def test_version(tally):
    done = tally("--version")
    assert (done.returncode, done.stdout) == (0, "tally 1.0\n")


def test_double_dash_ends_options(tally):
    done = tally("--", "-l", files={"-l": "a b\n"})
    assert (done.returncode, done.stdout) == (0, "1 2 4 -l\n")


def test_options_only_before_files(tally):
    done = tally("a.txt", "-l", files={"a.txt": "x\n", "-l": "y z\n"})
    assert done.stdout == "1 1 2 a.txt\n1 2 4 -l\n2 3 6 total\n"
