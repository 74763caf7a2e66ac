def test_definition_file(stencil):
    files = {"vars.txt": "user=ada\n# a comment\n\nhome=/home/ada\n"}
    done = stencil("-f", "vars.txt", stdin="{{user}} in {{home}}\n", files=files)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ada in /home/ada\n", "")


def test_file_value_keeps_spaces_and_equals(stencil):
    files = {"v": "greeting=  hi = there \n"}
    assert stencil("-fv", stdin="[{{greeting}}]", files=files).stdout == "[  hi = there ]"


def test_last_line_without_newline(stencil):
    assert stencil("-f", "v", stdin="{{a}}{{b}}\n", files={"v": "a=1\nb=2"}).stdout == "12\n"


def test_left_to_right(stencil):
    files = {"v": "x=file\ny=file\n"}
    assert stencil("x=arg", "-f", "v", "y=arg", stdin="{{x}} {{y}}\n", files=files).stdout == "file arg\n"


def test_two_files(stencil):
    files = {"a": "x=a\n", "b": "x=b\nz=b\n"}
    assert stencil("-f", "a", "-f", "b", stdin="{{x}}{{z}}\n", files=files).stdout == "bb\n"


def test_template_file(stencil):
    done = stencil("-t", "page.tpl", "t=T", stdin="ignored {{t}}\n", files={"page.tpl": "<{{t}}>\n"})
    assert (done.returncode, done.stdout) == (0, "<T>\n")


def test_template_file_attached(stencil):
    assert stencil("-tpage", "t=T", files={"page": "[{{t}}]"}).stdout == "[T]"


def test_double_dash_ends_options(stencil):
    assert stencil("--", "x=--strict", stdin="{{x}}\n").stdout == "--strict\n"


def test_missing_definition_file(stencil):
    done = stencil("-f", "nope.txt", stdin="x\n")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "stencil: cannot open 'nope.txt'\n")


def test_missing_template(stencil):
    done = stencil("-t", "nope.tpl")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "stencil: cannot open 'nope.tpl'\n")


def test_bad_line_in_a_definition_file(stencil):
    files = {"v": "a=1\n\n# ok\nnot a definition\nb=2\n"}
    done = stencil("-f", "v", stdin="{{a}}\n", files=files)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "stencil: v:4: invalid assignment 'not a definition'\n"


def test_spaces_around_a_name_in_a_file(stencil):
    done = stencil("-f", "v", stdin="{{name}}\n", files={"v": "name = x\n"})
    assert (done.returncode, done.stderr) == (2, "stencil: v:1: invalid assignment 'name = x'\n")
