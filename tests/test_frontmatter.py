"""Front matter (`gitswarm.problems.frontmatter.split`) read by libyaml gives what PyYAML alone
gave: on the project's problem files, on the SOLUTION.md selection writes, on the cases where
the two parsers differ, and on a seeded fuzz of broken front matter; and a blob's parse kept
by blob id (`gitswarm.memory.read.ParsedBlobs`)."""

from __future__ import annotations

import datetime
import random
from pathlib import Path

import pygit2
import pytest
import yaml

from gitswarm.memory.read import ParsedBlobs
from gitswarm.problems import frontmatter
from gitswarm.problems.frontmatter import FrontMatterError, Parsed, render, split

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def reference(text: str) -> Parsed:
    """`split` as it was before libyaml: PyYAML's pure-Python parser, the document parsed twice."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        raise FrontMatterError("the file must start with a '---' line opening the front matter", 1)
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        raise FrontMatterError("the front matter is never closed: add a '---' line after it", 1)
    yaml_text = "".join(lines[1:end])
    try:
        node = yaml.compose(yaml_text, Loader=yaml.SafeLoader)
        values = yaml.safe_load(yaml_text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else 1
        if mark is not None and mark.index >= len(yaml_text.rstrip()):
            ended = exc.context_mark if exc.context_mark is not exc.problem_mark else None
            line = ended.line + 2 if ended is not None else yaml_text.rstrip().count("\n") + 2
        raise FrontMatterError(f"invalid YAML: {exc.problem or exc}", line) from None
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"invalid YAML: {exc}", 2) from None
    if values is None:
        values, node = {}, None
    if not isinstance(values, dict):
        raise FrontMatterError("the front matter must be a mapping of keys to values", 2)
    values = {str(k): v for k, v in values.items()}
    key_lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            key_lines[key] = key_node.start_mark.line + 2
            if isinstance(value_node, yaml.ScalarNode):
                values[key] = None if value_node.tag.endswith(":null") else value_node.value
    return Parsed(values, key_lines, "".join(lines[end + 1 :]), end + 2)


def outcome(read, text: str) -> tuple:
    """What `read` makes of `text`: its parse, or its error; any other exception as its type."""
    try:
        return ("parsed", read(text))
    except FrontMatterError as exc:
        return ("error", exc.message, exc.line)
    except (ValueError, TypeError) as exc:  # PyYAML's constructor lets `!!int x` through as ValueError
        return ("raised", type(exc).__name__)


def corpus() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(PROBLEMS.rglob("*.md"))]
    return [t for t in texts if t.startswith("---")]


def test_libyaml_reads_front_matter_when_pyyaml_has_it():
    assert frontmatter.FAST is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)


def test_the_projects_problem_files_read_as_before():
    texts = corpus()
    assert len(texts) >= 20
    for text in texts:
        assert outcome(split, text) == outcome(reference, text)


def test_a_written_selection_reads_as_before():
    front = {"problem": "p1", "candidate": "ab" * 20, "path": "problems/p1/attempts/a.md", "nominations": 3,
             "verification": "verified", "passes": 2, "verify": 2, "when": datetime.date(2026, 12, 3),
             "notes": "two lines\nof text", "tags": ["x", 1, None]}
    text = render(front, "# The attempt\n\nAnswer: 9")
    parsed = split(text)
    assert outcome(split, text) == outcome(reference, text)
    assert parsed.values["nominations"] == "3" and parsed.values["when"] == "2026-12-03"
    assert parsed.values["tags"] == ["x", 1, None] and parsed.values["notes"] == "two lines\nof text"


@pytest.mark.parametrize("front", [
    "day: 2026-12-03\nat: 2026-12-03 10:00:00",                      # top level: the text as written
    "days: [2026-12-03, 2001-12-14t21:59:43.10-05:00]\nmore: {d: 2026-12-03}",  # nested: date objects
    "octal: 010\nclock: 1:30\nnothing: ~\nempty:\nyes: yes\nfloat: 1e3",
    "title: a\tb",                                                      # a tab PyYAML refuses
    "title: x\n\tkind: y",
    "solution: |#\n  text",                                             # libyaml accepts `|#`
    "solution: >-2#\n  text",
    "a: !\nb: 1",                                                       # `!` on nothing: PyYAML's null
    "!\r\n#=010",
    "\n\ufeff\\n- x{a: 1}",                                            # a byte order mark PyYAML keeps
    "title: Wow!\nanswer: n!",
    "{1?}", "tags: [a?, b]", "title: Why?\ntags: [a, b]",                 # libyaml goes on past `?` in a flow
    "title: [unclosed\nkind: proof", "title: 'open", "a: b: c", "- a\n- b", "just text", "", "# only a comment",
    "a: 1\na: 2", "? [a, b]\n: c", "a: &x [1, 2]\nb: *x", "a: *nowhere", "<<: {a: 1}\nb: 2",
    "a: !!binary aGk=", "a: !!set {x, y}", "a: !!omap [x: 1]", "a: !custom x",
    "a: \x00", "a: \x85b", "a: b\u2028c: d", "a: é\U0001F600", "a: \ud800", "%YAML 1.1\n---\na: 1",
    "a: 1\n---\nb: 2", "a: \"\\x41\\u00e9\\N\"", "a: \"\\q\"", "{a: 1, b: [c, d]}",
])
def test_where_the_parsers_differ_it_reads_as_before(front):
    text = f"---\n{front}\n---\nBody\n"
    assert outcome(split, text) == outcome(reference, text)


def test_nested_dates_stay_date_objects():
    parsed = split("---\nday: 2026-12-03\nwhen: [2026-12-03]\n---\n")
    assert parsed.values == {"day": "2026-12-03", "when": [datetime.date(2026, 12, 3)]}


TOKENS = ["key", "b c", ":", ": ", "- ", " ", "  ", "\n", "\n  ", "\n- ", "[", "]", "{", "}", ", ", "'", '"', "#",
          " #", "|", ">", "|-", ">+", "&x ", "*x", "!", "!!str ", "?", "? ", "%", "@", "`", "2024-01-02", "010",
          "1:30", "~", "yes", "1e3", "\\", "é", "\u2028", "\x85", "\r", "...", "---", "<<: *x", "\t", "\x00",
          "\ufeff", "\xa0", "'a''b'", "{a: 1}", "[a, {b: c}]"]


def mutated(rng: random.Random, texts: list[str]) -> str:
    """A problem file with a few characters of its front matter deleted, inserted or replaced,
    or a front matter of random YAML tokens."""
    if rng.random() < 0.5:
        return "---\n" + "".join(rng.choice(TOKENS) for _ in range(rng.randint(2, 30))) + "\n---\nBody\n"
    text = rng.choice(texts)
    end = text.index("\n---", 3) + 5
    chars = list(text[:end])
    for _ in range(rng.randint(1, 5)):
        at, roll = rng.randrange(4, len(chars) - 5), rng.random()
        if roll < 0.35:
            del chars[at]
        elif roll < 0.75:
            chars.insert(at, rng.choice(TOKENS))
        else:
            chars[at] = rng.choice(TOKENS)
    return "".join(chars) + text[end:]


def test_broken_front_matter_reads_as_before():
    rng, texts = random.Random(20261203), corpus()
    differ = [t for t in (mutated(rng, texts) for _ in range(400)) if outcome(split, t) != outcome(reference, t)]
    assert differ == []


def blob_repo(path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(path), bare=True)


def test_a_blob_is_parsed_once_while_kept(tmp_path):
    repo = blob_repo(tmp_path / "r")
    first = repo.create_blob(b"---\ncandidate: abc\npath: p.md\n---\nBody\n")
    second = repo.create_blob(b"---\ncandidate: def\n---\n")
    parsed: list[bytes] = []

    def values(data: bytes) -> dict:
        parsed.append(data)
        return split(data.decode()).values

    blobs = ParsedBlobs(values)
    assert blobs.get(repo, first) == {"candidate": "abc", "path": "p.md"}
    assert blobs.get(repo, first) == {"candidate": "abc", "path": "p.md"}
    assert blobs.get(repo, second) == {"candidate": "def"}
    assert len(parsed) == 2


def test_the_oldest_parse_goes_past_the_limit(tmp_path):
    repo = blob_repo(tmp_path / "r")
    ids = [repo.create_blob(f"blob {i}".encode()) for i in range(3)]
    parsed: list[bytes] = []
    blobs = ParsedBlobs(lambda data: parsed.append(data) or data.decode(), limit=2)
    assert [blobs.get(repo, i) for i in ids] == ["blob 0", "blob 1", "blob 2"]
    assert blobs.get(repo, ids[2]) == "blob 2" and len(parsed) == 3  # kept
    assert blobs.get(repo, ids[0]) == "blob 0" and len(parsed) == 4  # gone past the limit: parsed again


@pytest.mark.parametrize(("front", "line"), [("a: !!int x\n", 2), ("z: 1\na: !!timestamp soon\n", 3),
                                             ("q: 2\nb: {a: !!int x}\n", 3)])
def test_a_value_that_does_not_fit_its_tag_names_its_line(front: str, line: int):
    """PyYAML's constructors raise plain ValueError or AttributeError there: a problem file
    saying `!!int x` crashed the set's loader with a traceback."""
    with pytest.raises(FrontMatterError) as caught:
        split(f"---\n{front}---\nbody\n")
    assert caught.value.line == line
    assert "does not fit its tag" in caught.value.message


def test_a_set_with_a_badly_tagged_value_is_refused_with_its_file_and_line(tmp_path: Path):
    from gitswarm.errors import BadInput
    from gitswarm.problems.loader import load_set

    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "p1.md").write_text("---\nid: p1\nkind: proof\npoints: !!int seven\n---\nProve it.\n")
    with pytest.raises(BadInput) as caught:
        load_set(folder)
    [defect] = caught.value.defects
    assert str(defect).startswith(f"{folder / 'p1.md'}:4: ") and "does not fit its tag" in str(defect)
