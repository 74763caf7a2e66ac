def test_missing_file(tally):
    done = tally("missing.txt")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "tally: cannot open 'missing.txt'\n")


def test_missing_file_among_others(tally):
    done = tally("-l", "a", "missing", "b", files={"a": "1\n", "b": "2\n3\n"})
    assert (done.returncode, done.stdout) == (1, "1 a\n2 b\n3 total\n")
    assert done.stderr == "tally: cannot open 'missing'\n"


def test_total_still_printed_when_every_file_is_missing(tally):
    done = tally("-c", "x", "y")
    assert (done.returncode, done.stdout) == (1, "0 total\n")
    assert done.stderr == "tally: cannot open 'x'\ntally: cannot open 'y'\n"


def test_missing_path_in_a_folder(tally, tmp_path):
    (tmp_path / "real").write_text("a\n")
    done = tally("-l", "real", "nope/none.txt")
    assert (done.returncode, done.stdout) == (1, "1 real\n1 total\n")
    assert done.stderr == "tally: cannot open 'nope/none.txt'\n"


def test_unknown_option(tally):
    done = tally("-x", stdin="a\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "tally: unknown option '-x'\n")


def test_unknown_letter_in_a_combined_option(tally):
    done = tally("-lqz", stdin="a\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "tally: unknown option '-q'\n")


def test_unknown_long_option(tally):
    done = tally("--lines", stdin="a\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "tally: unknown option '--lines'\n")


def test_bad_option_stops_before_any_file(tally):
    done = tally("-y", "a.txt", files={"a.txt": "a\n"})
    assert (done.returncode, done.stdout) == (2, "")
