import pytest


@pytest.mark.parametrize("template, expected", [
    ("Hello, {{who}}!\n", "Hello, world!\n"),
    ("Hello, {{ who }}!\n", "Hello, world!\n"),
    ("Hello, {{\twho  }}!\n", "Hello, world!\n"),
    ("{{who}}{{who}}", "worldworld"),
    ("no placeholders here\n", "no placeholders here\n"),
    ("{ who } and {who}\n", "{ who } and {who}\n"),
    ("closing }} alone\n", "closing }} alone\n"),
    ("{{{who}}}\n", "{{{who}}}\n"),
    ("{{ {{who}} }}\n", "{{ world }}\n"),
    ("a {{who\n", "a {{who\n"),
    ("{{who\n}}\n", "{{who\n}}\n"),
    ("{{}} and {{ 2x }} and {{a b}}\n", "{{}} and {{ 2x }} and {{a b}}\n"),
    ("C:\\dir\\file-{{who}}\n", "C:\\dir\\file-world\n"),
], ids=["plain", "spaces", "tabs_and_spaces", "twice_without_newline", "no_placeholders",
        "single_braces", "lone_closing_braces", "triple_braces", "nested_braces", "unterminated",
        "across_lines", "malformed_kept", "backslashes_elsewhere"])
def test_expansion(stencil, template, expected):
    done = stencil("who=world", stdin=template)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


def test_several_names(stencil):
    done = stencil("a=1", "b=2", "_c3=3", stdin="{{a}}+{{b}}={{_c3}}\n")
    assert done.stdout == "1+2=3\n"


def test_names_are_case_sensitive(stencil):
    assert stencil("x=lower", "X=upper", stdin="{{x}} {{X}}\n").stdout == "lower upper\n"


def test_value_with_equals_signs_and_spaces(stencil):
    assert stencil("q=a=b c", stdin="[{{q}}]\n").stdout == "[a=b c]\n"


def test_empty_value(stencil):
    assert stencil("e=", stdin="[{{e}}]\n").stdout == "[]\n"


def test_values_are_not_expanded_again(stencil):
    assert stencil("a={{b}}", "b=no", stdin="{{a}}\n").stdout == "{{b}}\n"


def test_value_with_a_newline(stencil):
    assert stencil("v=one\ntwo", stdin="<{{v}}>\n").stdout == "<one\ntwo>\n"


def test_later_definition_wins(stencil):
    assert stencil("x=1", "x=2", stdin="{{x}}\n").stdout == "2\n"


def test_escaped_braces(stencil):
    done = stencil(stdin="write \\{{name}} for a placeholder\n")
    assert (done.returncode, done.stdout) == (0, "write {{name}} for a placeholder\n")


def test_escape_next_to_a_placeholder(stencil):
    assert stencil("n=v", stdin="\\{{n}} {{n}} \\\\{{n}}\n").stdout == "{{n}} v \\{{n}}\n"


def test_bytes_are_copied(stencil):
    done = stencil("n=ü", stdin="a\r\n{{n}}\tb\n".encode())
    assert done.stdout == "a\r\nü\tb\n"


def test_long_template(stencil):
    done = stencil("x=ab", stdin="{{x}}." * 20000)
    assert done.stdout == "ab." * 20000
