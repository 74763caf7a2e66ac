"""Split a problem file into YAML front matter and body, keeping line numbers for errors."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import yaml

# libyaml's parser when PyYAML was built with it (10x faster); the constructor and resolver are
# PyYAML's own either way, so the values are the same.
FAST: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Where libyaml reads YAML otherwise than PyYAML, PyYAML alone reads it: libyaml accepts tabs
# PyYAML refuses and `|#` headers, drops a byte order mark PyYAML keeps, gives `!` on an empty
# value another type, and lets a plain scalar in `[...]` or `{...}` go on past a `?`.
_PYYAML_ONLY = re.compile(r"[\t!\ufeff]|[|>][-+0-9]*#")


def _pyyaml_only(yaml_text: str) -> bool:
    return bool(_PYYAML_ONLY.search(yaml_text)) or ("?" in yaml_text and ("[" in yaml_text or "{" in yaml_text))


@dataclass(frozen=True)
class FrontMatterError(Exception):
    """The front matter cannot be read; `line` is 1-based within the whole file."""

    message: str
    line: int | None = None


@dataclass(frozen=True)
class Parsed:
    """Front matter values, the 1-based file line of each key, and the body text."""

    values: dict[str, object]
    key_lines: dict[str, int]
    body: str
    body_line: int


def split(text: str) -> Parsed:
    """Parse `---` delimited YAML front matter at the top of `text`."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        raise FrontMatterError("the file must start with a '---' line opening the front matter", 1)
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):  # unindented: not a line of a block scalar
            break
    else:
        raise FrontMatterError("the front matter is never closed: add a '---' line after it", 1)
    yaml_text = "".join(lines[1:end])
    try:
        pairs, values = _parse(yaml_text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else 1
        if mark is not None and mark.index >= len(yaml_text.rstrip()):  # it ran off the end:
            # point at where the unclosed bracket or quote opened, else at the last line
            ended = exc.context_mark if exc.context_mark is not exc.problem_mark else None
            line = ended.line + 2 if ended is not None else yaml_text.rstrip().count("\n") + 2
        raise FrontMatterError(f"invalid YAML: {exc.problem or exc}", line) from None
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"invalid YAML: {exc}", 2) from None
    except UNREADABLE:  # a tag the value does not fit: `!!int x`, `!!timestamp soon`
        raise FrontMatterError("invalid YAML: a value does not fit its tag (as `!!int x` would not); "
                               "remove the tag or fix the value", _unreadable_line(yaml_text)) from None
    if values is None:
        values, pairs = {}, []
    if not isinstance(values, dict):
        raise FrontMatterError("the front matter must be a mapping of keys to values", 2)
    values = {str(k): v for k, v in values.items()}
    key_lines: dict[str, int] = {}
    for key_node, value_node in pairs:
        key = str(key_node.value)
        key_lines[key] = key_node.start_mark.line + 2
        if isinstance(value_node, yaml.ScalarNode):
            # The text as written: YAML would turn `010` into 8 and `1:30` into 90.
            values[key] = None if value_node.tag.endswith(":null") else value_node.value
    body = "".join(lines[end + 1 :])
    return Parsed(values, key_lines, body, end + 2)


Pairs = list[tuple[yaml.Node, yaml.Node]]


def _parse(yaml_text: str) -> tuple[Pairs, object]:
    """The document's top-level (key, value) nodes as written, and its value, parsed once: by
    libyaml, else (or when it fails) by PyYAML, whose error words and marks are those users
    have always been shown."""
    if FAST is not yaml.SafeLoader and not _pyyaml_only(yaml_text):
        # On libyaml's error, PyYAML reads it again (libyaml reads UTF-8: a lone surrogate stops it).
        with contextlib.suppress(yaml.YAMLError, UnicodeEncodeError):
            return _load(yaml_text, FAST)
    return _load(yaml_text, yaml.SafeLoader)


UNREADABLE = (ValueError, TypeError, AttributeError, OverflowError)
"""What PyYAML's safe constructors raise, outside its own errors, on a value its tag does not fit."""


def _unreadable_line(yaml_text: str) -> int:
    """The file line of the first top-level value that cannot be built as its tag says."""
    root = yaml.compose(yaml_text, Loader=yaml.SafeLoader)
    for _, value in root.value if isinstance(root, yaml.MappingNode) else []:
        try:
            yaml.SafeLoader("").construct_object(value, deep=True)
        except UNREADABLE:
            return value.start_mark.line + 2
    return 2


def _load(yaml_text: str, loader: type) -> tuple[Pairs, object]:
    parser = loader(yaml_text)
    try:
        node = parser.get_single_node()
        # Copied first: constructing a mapping takes its `<<` merge keys out of the node.
        pairs = list(node.value) if isinstance(node, yaml.MappingNode) else []
        return pairs, None if node is None else parser.construct_document(node)
    finally:
        parser.dispose()


class _Dumper(yaml.SafeDumper):
    """Writes multi-line text as `|` blocks, so imported solutions stay readable."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    multi = "\n" in value and not any(c in value for c in "\r\t\x0b\x0c\x85\u2028\u2029")
    if multi and value == value.rstrip(" "):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _text)


def render(values: dict[str, object], body: str) -> str:
    """The inverse of `split`: a problem file with `values` as front matter."""
    front = yaml.dump(values, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{front}---\n\n{body.strip()}\n"
