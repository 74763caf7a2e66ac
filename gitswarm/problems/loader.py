"""Load and validate problem sets; every defect carries its file, line and a fix."""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from gitswarm.errors import BadInput
from gitswarm.problems import frontmatter, reproduce
from gitswarm.problems.model import Kind, Parts, Problem, ProblemSet

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
TEXT_KEYS = ("id", "title", "kind", "source", "answer", "solution", "grading", "executable", "build",
             "imported_from", "image", "grade_image")
FOLDER_KEYS = ("tests", "starter", "reference", "docs")
LIST_KEYS = ("eval_clean_hashes",)
PROGRAM_FOLDERS = ("tests", "starter", "reference")
SET_KEYS = ("name", "description", "defaults")
MAX_PROBLEM_BYTES = 1_000_000


@dataclass(frozen=True)
class Defect:
    """One thing wrong with a problem set, said so that the user can fix it."""

    path: Path
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.message}"


class ProblemSetError(BadInput):
    """A problem set has defects (`defects`, every one); the CLI prints them all. Bad input:
    nothing was changed."""

    def __init__(self, defects: list[Defect], where: str = "") -> None:
        named = f"the problem set {where}" if where else "the problem set"
        super().__init__(f"{named} has {len(defects)} defect(s)", where=where,
                         fix=f"`gitswarm problems check {where or 'SET'}` lists each")
        self.defects = defects


def problem_files(directory: Path) -> list[Path]:
    """The problem files of a set: every top-level `*.md` except README.md."""
    return sorted(p for p in directory.glob("*.md") if p.name.lower() != "readme.md")


def load_set(directory: Path) -> ProblemSet:
    """Load a problem set, or raise ProblemSetError listing every defect."""
    problem_set, defects = check_set(directory)
    if defects or problem_set is None:
        raise ProblemSetError(defects, str(directory))
    return problem_set


def check_set(directory: Path) -> tuple[ProblemSet | None, list[Defect]]:
    """Load what can be loaded and collect every defect (never raises on bad input)."""
    directory = Path(directory)
    if not directory.is_dir():
        return None, [Defect(directory, "not a folder: give the folder that holds the problem files")]
    name, description, defaults, defects = _read_set_toml(directory)
    problems: list[Problem] = []
    seen: dict[str, Path] = {}
    files = problem_files(directory)
    if not files:
        defects.append(Defect(directory, "no problem files: add one `<id>.md` file per problem"))
    for path in files:
        problem, file_defects = _load_problem(path)
        defects += file_defects
        if problem is None:
            continue
        if problem.id in seen:
            defects.append(Defect(path, f"duplicate id {problem.id!r}, also used by {seen[problem.id]}: "
                                  "give each problem its own id", 2))
            continue
        seen[problem.id] = path
        problems.append(problem)
    return ProblemSet(name or directory.resolve().name, directory, problems, description, defaults), defects


def _read_set_toml(directory: Path) -> tuple[str, str, dict[str, object], list[Defect]]:
    path = directory / "set.toml"
    if not path.exists():
        return "", "", {}, []
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        return "", "", {}, [Defect(path, "not UTF-8 text: save set.toml as UTF-8")]
    except OSError as exc:
        return "", "", {}, [Defect(path, f"cannot read set.toml ({exc.strerror or exc}): it must be a "
                                   "readable file")]
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        return "", "", {}, [Defect(path, f"invalid TOML: {exc}", int(line.group(1)) if line else None)]
    defects = [Defect(path, f"unknown key {k!r}; known keys: {', '.join(SET_KEYS)}")
               for k in data if k not in SET_KEYS]
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        defects.append(Defect(path, "'defaults' must be a table, e.g. [defaults] with workers = 4"))
        defaults = {}
    defects += _check_defaults(path, text, defaults)
    return str(data.get("name", "")), str(data.get("description", "")), defaults, defects


def _check_defaults(path: Path, text: str, defaults: dict[str, object]) -> list[Defect]:
    """[defaults] are `gitswarm solve` settings: a typo or a wrong type is a defect here, not a
    surprise (or an ignored line) when the run starts."""
    from pydantic import ValidationError

    from gitswarm.engine.config import SolveConfig

    def line(key: str) -> int | None:
        found = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=", text, re.MULTILINE)
        return text.count("\n", 0, found.start()) + 1 if found else None

    settable = sorted(set(SolveConfig.model_fields) - {"problems", "run"})
    defects = [Defect(path, f"unknown setting {k!r} in [defaults]; known: {', '.join(settable)}", line(k))
               for k in defaults if k not in settable]
    try:
        SolveConfig.model_validate({"model": "", **{k: v for k, v in defaults.items() if k in settable},
                                    "problems": path.parent, "run": path.parent})
    except ValidationError as exc:
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else "defaults"
            defects.append(Defect(path, f"[defaults] {key}: {error['msg']}", line(key)))
    return defects


def _load_problem(path: Path) -> tuple[Problem | None, list[Defect]]:
    try:
        size = path.stat().st_size
        if not path.is_file():
            return None, [Defect(path, "not a file: a problem is one `<id>.md` file; rename or move this")]
        if size > MAX_PROBLEM_BYTES:  # checked before reading: the file may be huge
            return None, [Defect(path, f"file is {size} bytes; the limit is {MAX_PROBLEM_BYTES}: keep "
                                 "statements short and put large data in a program problem's folders")]
        raw = path.read_bytes()
    except OSError as exc:
        return None, [Defect(path, f"cannot read the file ({exc.strerror or exc}): fix its permissions or "
                             "remove it")]
    if not raw.strip():
        return None, [Defect(path, "empty file: write front matter (id, kind, ...) and the statement", 1)]
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark from some editors
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, [Defect(path, "not UTF-8 text (a binary file?): save the file as UTF-8", line)]
    if control := _control_character(text):
        return None, [Defect(path, control[1], control[0])]
    try:
        parsed = frontmatter.split(text)
    except frontmatter.FrontMatterError as exc:
        return None, [Defect(path, exc.message, exc.line)]
    return _build(path, parsed)


def _control_character(text: str) -> tuple[int, str] | None:
    """The line and message of the first control character other than tab and newline (a
    carriage return is allowed only before a newline, as Windows ends lines), else None."""
    found = re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text.replace("\r\n", "\n"))
    if found is None:
        return None
    before = text.replace("\r\n", "\n")[: found.start()]
    line, column = before.count("\n") + 1, found.start() - before.rfind("\n")
    char = found.group()
    name = unicodedata.name(char, "") or {"\x00": "NUL", "\r": "carriage return",
                                          "\x1b": "escape", "\x7f": "delete"}.get(char, "control")
    return line, (f"control character U+{ord(char):04X} ({name}) at column {column}: a problem file "
                  "holds text only (tabs and newlines allowed); remove it")


def _build(path: Path, parsed: frontmatter.Parsed) -> tuple[Problem | None, list[Defect]]:
    values, lines = parsed.values, parsed.key_lines
    defects: list[Defect] = []

    def defect(key: str | None, message: str) -> None:
        defects.append(Defect(path, message, lines.get(key, 2) if key else None))

    for key in values:
        if key not in TEXT_KEYS + FOLDER_KEYS + LIST_KEYS:
            defect(key, f"unknown key {key!r}; known keys: {', '.join(TEXT_KEYS + FOLDER_KEYS + LIST_KEYS)}")
    text: dict[str, str | None] = {}
    for key in TEXT_KEYS + FOLDER_KEYS:
        value = values.get(key)
        if isinstance(value, bool | dict | list):
            defect(key, f"{key!r} must be text or a number, not {type(value).__name__}")
            value = None
        text[key] = None if value is None else str(value).strip()

    problem_id = text["id"] or path.stem
    if not ID_PATTERN.match(problem_id) or ".." in problem_id:
        defect("id", f"unsafe id {problem_id!r}: use letters, digits, '.', '_' and '-' (at most 80)")
    elif text["id"] and problem_id != path.stem and (path.parent / f"{problem_id}.md").exists():
        defect("id", f"id {problem_id!r} differs from the file name {path.name!r} and duplicates the id of "
               f"{problem_id}.md: give each problem its own id, the same as its file name")
    elif text["id"] and problem_id != path.stem:
        defect("id", f"id {problem_id!r} differs from the file name {path.name!r}: rename one")
    kind_text = text["kind"]
    if kind_text is None:
        defect(None, "missing 'kind': add `kind: proof`, `kind: answer`, `kind: program` or "
               "`kind: reproduce`")
        kind = None
    elif kind_text not in Kind.__members__.values():
        defect("kind", f"unknown kind {kind_text!r}: use proof, answer, program or reproduce")
        kind = None
    else:
        kind = Kind(kind_text)
    if not parsed.body.strip():
        defects.append(Defect(path, "missing statement: write it below the closing '---'", parsed.body_line))
    if kind is Kind.ANSWER and not text["answer"]:
        defect("answer" if "answer" in values else None, "an answer problem needs a non-empty 'answer' key")

    for key in reproduce.KEYS:
        if key in values and kind not in (None, Kind.REPRODUCE):
            defect(key, f"{key!r} is only for reproduce problems")
    if kind is Kind.REPRODUCE and text["starter"]:
        defect("starter", "'starter' is only for program problems: a reproduce problem starts from "
               "its documentation ('docs')")
    if kind is Kind.REPRODUCE and ID_PATTERN.match(problem_id):
        def elsewhere(file: Path, message: str, line: int | None) -> None:
            defects.append(Defect(file, message, line))
        folders = reproduce.resolve(path, problem_id, values, text, defect, elsewhere)
    else:
        folders = _folders(path, problem_id, kind, text, defect)
    if defects or kind is None:
        return None, defects
    return Problem(
        id=problem_id, title=text["title"] or problem_id, kind=kind, statement=parsed.body.strip(),
        path=path, source=text["source"] or "", answer=text["answer"], solution=text["solution"],
        grading=text["grading"], **folders,
    ), []


def _folders(path: Path, problem_id: str, kind: Kind | None, text: dict[str, str | None],
             defect) -> Parts:
    """Resolve the program folders (tests, starter, reference); default `<id>/<name>`."""
    found: dict[str, Path | None] = dict.fromkeys(PROGRAM_FOLDERS)
    if kind is not Kind.PROGRAM or not ID_PATTERN.match(problem_id):
        for key in PROGRAM_FOLDERS:
            if text[key] and kind not in (None, Kind.PROGRAM, Kind.REPRODUCE):
                defect(key, f"{key!r} is only for program problems")
        return Parts(tests_dir=None, starter_dir=None, reference_dir=None)
    for key in PROGRAM_FOLDERS:
        given = text[key]
        folder = path.parent / (given or f"{problem_id}/{key}")
        resolved = folder.resolve()
        if not resolved.is_relative_to(path.parent.resolve()):
            defect(key, f"{key!r} folder {given!r} lies outside the set folder")
        elif not folder.is_dir():
            if key == "tests":
                defect(key if given else None, f"missing test folder {folder}: a program problem needs "
                       "hidden pytest files there (or set 'tests:' to their folder)")
            elif given:
                defect(key, f"{key!r} folder {folder} does not exist")
        else:
            if key == "tests" and not list(folder.rglob("test_*.py")):
                defect(key if given else None, f"test folder {folder} holds no test_*.py file")
            found[key] = folder
    return Parts(tests_dir=found["tests"], starter_dir=found["starter"], reference_dir=found["reference"])
