def test_strict_accepts_a_clean_template(stencil):
    done = stencil("--strict", "a=1", "b=2", stdin="{{a}} {{ b }} \\{{c}}\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "1 2 {{c}}\n", "")


def test_strict_unterminated(stencil):
    done = stencil("--strict", "a=1", stdin="{{a}}\nopen {{a\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "stencil: unterminated placeholder on line 2\n")


def test_strict_placeholder_across_lines_is_unterminated(stencil):
    done = stencil("--strict", "a=1", stdin="{{a\n}} {{a}}\n")
    assert (done.returncode, done.stderr) == (1, "stencil: unterminated placeholder on line 1\n")


def test_strict_malformed(stencil):
    done = stencil("--strict", stdin="line\nx {{ 2x }} y\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "stencil: malformed placeholder '{{ 2x }}' on line 2\n")


def test_strict_empty_placeholder(stencil):
    assert stencil("--strict", stdin="{{}}\n").stderr == "stencil: malformed placeholder '{{}}' on line 1\n"


def test_strict_unused_name(stencil):
    done = stencil("--strict", "x=1", "y=2", "z=3", stdin="{{y}}\n")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "stencil: unused name 'x'\n")


def test_strict_unused_name_from_a_file(stencil):
    done = stencil("--strict", "-f", "v", "b=3", stdin="{{a}}{{b}}\n", files={"v": "a=1\nc=2\nb=0\n"})
    assert (done.returncode, done.stderr) == (1, "stencil: unused name 'c'\n")


def test_strict_unused_order_of_first_definition(stencil):
    done = stencil("--strict", "p=1", "q=2", "p=3", stdin="none\n")
    assert done.stderr == "stencil: unused name 'p'\n"


def test_strict_first_error_from_the_start(stencil):
    done = stencil("--strict", stdin="{{ok}} {{\n")
    assert (done.returncode, done.stderr) == (1, "stencil: undefined name 'ok' on line 1\n")


def test_strict_template_errors_before_unused(stencil):
    done = stencil("--strict", "unused=1", stdin="{{missing}}\n")
    assert done.stderr == "stencil: undefined name 'missing' on line 1\n"


def test_strict_anywhere_among_the_words(stencil):
    assert stencil("a=1", "--strict", "b=2", stdin="{{a}}\n").stderr == "stencil: unused name 'b'\n"


def test_without_strict_unused_names_are_fine(stencil):
    done = stencil("x=1", "y=2", stdin="{{y}}\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "2\n", "")
