"""A reproduce problem's behavioural test suite: ProgramBench's `tests.json`, read tolerantly.

The public format is

    {"branches": {"<branch>": {"ignored": false, "ignore_reason": "",
                                "tests": ["eval.tests.test_x.test_y", ...],
                                "ignored_tests": [{"name": ..., "reasons": [{"id": "gold_fail"}]}]}}}

and each branch's test code lives in `<branch>/eval/tests/test_*.py` beside it. Some public
files carry trailing commas, which strict JSON rejects; they are dropped before parsing
(outside strings only, so line numbers stay as written). A test counts unless its branch is
ignored or it is listed in `ignored_tests` (`gold_fail`: the reference fails it;
`dummy_pass`: an empty program passes it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

SUITE_FILE = "tests.json"
BRANCH_TESTS = "eval/tests"
"""Where a branch's test files live, inside its folder."""


@dataclass(frozen=True)
class SuiteError(Exception):
    """`tests.json` cannot be used; `line` is 1-based when known."""

    message: str
    line: int | None = None


@dataclass(frozen=True)
class Branch:
    """One test branch: its tests, and the ones not counted with their reasons."""

    id: str
    tests: tuple[str, ...]
    ignored_tests: dict[str, tuple[str, ...]]
    ignored: bool = False
    line: int | None = None
    """The line of the branch's key in tests.json."""

    def counted(self) -> list[str]:
        """The tests that count towards the score (none when the whole branch is ignored)."""
        if self.ignored:
            return []
        return [t for t in self.tests if t not in self.ignored_tests]


@dataclass(frozen=True)
class Suite:
    """Every branch of a suite, in file order."""

    branches: tuple[Branch, ...]

    @property
    def total(self) -> int:
        """The number of counted tests over all branches."""
        return sum(len(b.counted()) for b in self.branches)


def canonical(name: str) -> str:
    """A test name without the `eval.` prefix: tests.json lists `tests.test_x.y` for some
    branches and `eval.tests.test_x.y` for others, while pytest's JUnit XML, run from the
    branch folder, always says `eval.tests.test_x.y`; the harness credits either."""
    return name.removeprefix("eval.")


def without_trailing_commas(text: str) -> str:
    """`text` with every comma that closes an object or array removed (outside strings);
    each is replaced by a space, so lines and columns stay where they were."""
    out = list(text)
    in_string = escaped = False
    pending: int | None = None
    for i, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string, pending = True, None
        elif char == ",":
            pending = i
        elif char in "}]":
            if pending is not None:
                out[pending] = " "
            pending = None
        elif not char.isspace():
            pending = None
    return "".join(out)


def read_suite(path: Path) -> Suite:
    """Read and check `tests.json`; raise SuiteError with the line of the first defect."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SuiteError("not UTF-8 text: save tests.json as UTF-8") from None
    except OSError as exc:
        raise SuiteError(f"cannot read it ({exc.strerror or exc})") from None
    try:
        data = json.loads(without_trailing_commas(text))
    except json.JSONDecodeError as exc:
        raise SuiteError(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    branches = data.get("branches") if isinstance(data, dict) else None
    if not isinstance(branches, dict) or not branches:
        raise SuiteError('expected {"branches": {"<branch id>": {"tests": [...]}, ...}} with at least '
                         "one branch", 1)
    return Suite(tuple(_branch(str(key), value, _line_of(text, key)) for key, value in branches.items()))


def _branch(key: str, value: object, line: int | None) -> Branch:
    where = f"branch {key!r}"
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,80}", key) or ".." in key:
        raise SuiteError(f"{where}: a branch id must be a safe folder name (letters, digits, '.', '_', '-')",
                         line)
    if not isinstance(value, dict):
        raise SuiteError(f"{where}: expected an object with 'tests' and 'ignored_tests'", line)
    tests = value.get("tests")
    if not isinstance(tests, list) or not all(isinstance(t, str) and t for t in tests):
        raise SuiteError(f"{where}: 'tests' must be a list of test names", line)
    ignored = value.get("ignored", False)
    if not isinstance(ignored, bool):
        raise SuiteError(f"{where}: 'ignored' must be true or false", line)
    return Branch(key, tuple(tests), _ignored_tests(where, value.get("ignored_tests", []), line),
                  ignored, line)


def _ignored_tests(where: str, value: object, line: int | None) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, list):
        raise SuiteError(f"{where}: 'ignored_tests' must be a list of {{\"name\", \"reasons\"}}", line)
    found: dict[str, tuple[str, ...]] = {}
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise SuiteError(f"{where}: each ignored test needs a 'name'", line)
        reasons = item.get("reasons", [])
        ids = tuple(str(r.get("id", "")) for r in reasons if isinstance(r, dict)) \
            if isinstance(reasons, list) else ()
        found[item["name"]] = ids
    return found


def _line_of(text: str, key: str) -> int | None:
    found = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def branch_folder(tests_dir: Path, branch: Branch) -> Path:
    """The folder that holds one branch's `eval/tests/test_*.py`."""
    return tests_dir / branch.id


def missing_code(tests_dir: Path, suite: Suite) -> list[Branch]:
    """Branches with counted tests but no `eval/tests/test_*.py` files."""
    return [b for b in suite.branches if b.counted()
            and not list((branch_folder(tests_dir, b) / BRANCH_TESTS).glob("test_*.py"))]
