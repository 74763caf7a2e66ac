import pytest


@pytest.mark.parametrize("text, expected", [
    ("one two\nthree\n", "2 3 14\n"),
    ("", "0 0 0\n"),
    ("\n", "1 0 1\n"),
    ("no newline", "0 2 10\n"),
    ("  spaced   out  \n", "1 2 17\n"),
    ("tab\tseparated\twords\n", "1 3 20\n"),
    ("a\r\nb\r\n", "2 2 6\n"),
    ("x\vy\fz\n", "1 3 6\n"),
    ("\n\n\n", "3 0 3\n"),
    ("punctuation, is-part; of words!\n", "1 4 32\n"),
], ids=["two_lines", "empty", "lone_newline", "no_final_newline", "runs_of_spaces", "tabs",
        "carriage_returns", "vertical_tab_and_form_feed", "blank_lines", "punctuation"])
def test_default_counts_from_stdin(tally, text, expected):
    done = tally(stdin=text)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


def test_bytes_not_characters(tally):
    assert tally("-c", stdin="héllo wörld\n".encode()).stdout == "14\n"


def test_non_ascii_bytes_are_word_bytes(tally):
    assert tally("-w", stdin=b"\xff\xfe caf\xc3\xa9\n").stdout == "2\n"


def test_nul_bytes_are_counted(tally):
    assert tally(stdin=b"a\x00b\n").stdout == "1 1 4\n"


def test_long_input(tally):
    text = "word " * 20000 + "\n"
    assert tally(stdin=text * 5).stdout == f"5 100000 {len(text) * 5}\n"
