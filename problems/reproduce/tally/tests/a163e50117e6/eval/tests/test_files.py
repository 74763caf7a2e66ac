def test_one_file(tally):
    done = tally("a.txt", files={"a.txt": "one two\nthree\n"})
    assert (done.returncode, done.stdout, done.stderr) == (0, "2 3 14 a.txt\n", "")


def test_file_instead_of_stdin(tally):
    assert tally("a.txt", stdin="ignored input\n", files={"a.txt": "x\n"}).stdout == "1 1 2 a.txt\n"


def test_two_files_and_a_total(tally):
    done = tally("a.txt", "b.txt", files={"a.txt": "one two\nthree\n", "b.txt": "x"})
    assert (done.returncode, done.stdout) == (0, "2 3 14 a.txt\n0 1 1 b.txt\n2 4 15 total\n")


def test_three_files_with_lines_only(tally):
    files = {"a": "1\n2\n", "b": "3\n", "c": "4\n5\n6\n"}
    assert tally("-l", "a", "b", "c", files=files).stdout == "2 a\n1 b\n3 c\n6 total\n"


def test_same_file_twice(tally):
    assert tally("-c", "a", "a", files={"a": "abc\n"}).stdout == "4 a\n4 a\n8 total\n"


def test_name_is_printed_as_given(tally, tmp_path):
    (tmp_path / "sub").mkdir()
    done = tally("-l", "./sub/../sub/f.txt", files={"sub/f.txt": "a\nb\n"})
    assert done.stdout == "2 ./sub/../sub/f.txt\n"


def test_dash_is_stdin(tally):
    assert tally("-", stdin="a b c\n").stdout == "1 3 6 -\n"


def test_dash_among_files(tally):
    done = tally("-w", "a", "-", files={"a": "one\n"}, stdin="two three\n")
    assert done.stdout == "1 a\n2 -\n3 total\n"


def test_empty_file(tally):
    assert tally("e", files={"e": ""}).stdout == "0 0 0 e\n"


def test_name_with_spaces(tally):
    assert tally("-l", "my file.txt", files={"my file.txt": "\n\n"}).stdout == "2 my file.txt\n"
