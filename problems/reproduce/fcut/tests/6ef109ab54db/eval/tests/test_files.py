def test_one_file(fcut):
    done = fcut("-d,", "-f2", "a.csv", files={"a.csv": "1,2\n3,4\n"}, stdin="x,y\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "2\n4\n", "")


def test_files_are_one_stream(fcut):
    done = fcut("-d,", "-f1", "a", "b", files={"a": "1,2\n3,4", "b": "5,6\n"})
    assert done.stdout == "1\n3\n5\n"


def test_dash_is_stdin(fcut):
    assert fcut("-d,", "-f2", "a", "-", files={"a": "1,2\n"}, stdin="3,4\n").stdout == "2\n4\n"


def test_missing_file(fcut):
    done = fcut("-d,", "-f1", "a", "nope", "b", files={"a": "1,2\n", "b": "3,4\n"})
    assert (done.returncode, done.stdout, done.stderr) == (1, "1\n3\n", "fcut: cannot open 'nope'\n")


def test_double_dash_ends_options(fcut):
    done = fcut("-f1", "--", "-s", files={"-s": "x\ty\n"})
    assert (done.returncode, done.stdout) == (0, "x\n")
