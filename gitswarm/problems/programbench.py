"""Turn a ProgramBench task in its public layout into a `reproduce` problem.

A task folder holds `task.yaml` (repository, commit, language, difficulty,
eval_clean_hashes), `tests.json` (branches, tests, ignored tests; trailing commas tolerated)
and, once the harness has fetched them, `tests/<branch>/eval/tests/test_*.py`. The reference
executable and the documentation come from the user (`reference`, `docs`), or from the task's
container image (`images`, `taskimage.py`): then the reference stays in the image, run there,
the documentation is what the image's workspace holds, and the problem names both images.
The problem written is

    <out>/<id>.md                       front matter (`imported_from`: the reference's path) + the statement
    <out>/<id>/docs/                    the documentation given (visible)
    <out>/<id>/reference/<executable>   the reference executable (hidden; none with an image)
    <out>/<id>/tests/tests.json         verbatim (hidden)
    <out>/<id>/tests/<branch>/...       the branches' test code, when the task has it (hidden)

Every defect of the task's files is reported with file and line before anything is written.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from gitswarm.errors import BadInput
from gitswarm.problems import frontmatter
from gitswarm.problems.importers import safe_id
from gitswarm.problems.loader import ID_PATTERN, Defect
from gitswarm.problems.reproduce import EXECUTABLE_PATTERN, SHA256
from gitswarm.problems.suite import SUITE_FILE, Suite, SuiteError, missing_code, read_suite
from gitswarm.problems.taskimage import TaskImages, copy_docs

TASK_FILE = "task.yaml"
TASK_KEYS = ("repository", "commit", "language", "difficulty", "eval_clean_hashes")
STATEMENT = """\
Rebuild the program `{exe}` ({repository}, written in {language}) from its documentation
(`docs/` beside this statement) and the behaviour of its reference executable.

Write a whole codebase, in any language, with a `compile.sh` at its root that builds
`./executable`: a program that behaves as `{exe}` does. Hidden behavioural tests run
`./executable` with arguments and input and compare what it prints, its files and its exit
status with the reference's. A copy of the reference executable scores nothing.
"""


class TaskDefects(BadInput):
    """The task cannot be imported; nothing was written."""

    def __init__(self, defects: list[Defect]) -> None:
        super().__init__(f"{len(defects)} defect(s) in the task")
        self.defects = defects


@dataclass(frozen=True)
class Imported:
    """What an import wrote, and the task's branches whose test code was absent."""

    problem_file: Path
    suite: Suite
    without_code: list[str]
    docs: tuple[str, ...] = ()
    """The documentation copied out of the task's image (paths below `docs/`)."""


def import_task(task_dir: Path, reference: Path | None, docs: Path | None, out: Path, *,
                executable: str | None = None, overwrite: bool = False,
                images: TaskImages | None = None) -> Imported:
    """Write the task at `task_dir` as a reproduce problem in the set folder `out`: its reference
    and docs from `reference` and `docs`, or from the task's `images`."""
    task_dir, out = Path(task_dir), Path(out)
    task, defects = read_task(task_dir / TASK_FILE)
    suite = None
    try:
        suite = read_suite(task_dir / SUITE_FILE)
    except SuiteError as exc:
        defects.append(Defect(task_dir / SUITE_FILE, exc.message, exc.line))
    repository = str(task.get("repository") or task_dir.name)
    name = executable or repository.rstrip("/").split("/")[-1]
    defects += _inputs(reference, docs, name, images is not None)
    pid = safe_id(task_dir.resolve().name)
    if not ID_PATTERN.match(pid) or ".." in pid:
        defects.append(Defect(task_dir, f"the task folder's name {task_dir.name!r} makes no safe problem id"))
    if defects or suite is None:
        raise TaskDefects(defects)
    target = out / f"{pid}.md"
    if (target.exists() or (out / pid).exists()) and not overwrite:
        raise FileExistsError(f"{target} (or its folder) already exists: allow overwriting, or import "
                              "into another folder")
    without = [b.id for b in missing_code(task_dir / "tests", suite)]
    listed = _write(task_dir, reference, docs, out / pid, name, images)
    front = _front(pid, task, name, reference) | (
        {"image": images.image, "grade_image": images.grade_image} if images else {})
    target.write_text(frontmatter.render(front, STATEMENT.format(
        exe=name, repository=repository, language=task.get("language") or "an unknown language")),
        encoding="utf-8")
    _set_toml(out)
    return Imported(target, suite, without, tuple(listed))


def read_task(path: Path) -> tuple[dict[str, object], list[Defect]]:
    """task.yaml's values, and its defects with their lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, [Defect(path, f"no {TASK_FILE}: give the folder of one ProgramBench task "
                           "(tasks/<instance_id>/)")]
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [Defect(path, f"cannot read it as UTF-8 text ({exc})")]
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return {}, [Defect(path, f"invalid YAML: {exc.problem or exc}", mark.line + 1 if mark else None)]
    except yaml.YAMLError as exc:
        return {}, [Defect(path, f"invalid YAML: {exc}")]
    if not isinstance(data, dict):
        return {}, [Defect(path, "expected a mapping of repository, commit, language, ...", 1)]
    defects = []
    hashes = data.get("eval_clean_hashes") or []
    if not isinstance(hashes, list) or not all(isinstance(h, str) and SHA256.match(h.lower()) for h in hashes):
        defects.append(Defect(path, "'eval_clean_hashes' must be a list of sha256 hex digests",
                              _line(text, "eval_clean_hashes")))
    if not isinstance(data.get("repository", ""), str):
        defects.append(Defect(path, "'repository' must be text such as owner/name", _line(text, "repository")))
    return data, defects


def _line(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(f"{key}:"):
            return number
    return None


def _inputs(reference: Path | None, docs: Path | None, name: str, in_image: bool) -> list[Defect]:
    defects = []
    if not EXECUTABLE_PATTERN.match(name):
        defects.append(Defect(reference or Path(name), f"the executable's name {name!r} is not a plain file name: "
                              "give one with --executable"))
    if in_image:
        return defects
    if reference is None or docs is None:
        return [*defects, Defect(Path("."), "give the reference executable and its documentation, or the "
                                 "task's image")]
    if not Path(reference).is_file():
        defects.append(Defect(reference, "the reference executable is not a file: give the built "
                              "program (ProgramBench ships it inside its Docker images)"))
    if not Path(docs).is_dir():
        defects.append(Defect(docs, "the documentation is not a folder: give the folder of the "
                              "program's documentation (README, manual pages, ...)"))
    return defects


def _front(pid: str, task: dict[str, object], name: str, reference: Path | None) -> dict[str, object]:
    repository, commit = task.get("repository", ""), str(task.get("commit") or "")
    details = ", ".join(str(v) for v in (task.get("language"), task.get("difficulty")) if v)
    front: dict[str, object] = {
        "id": pid, "title": f"Rebuild {name} ({repository})", "kind": "reproduce",
        "source": f"ProgramBench task {repository}@{commit[:7]}" + (f" ({details})" if details else "")
                  + " (MIT)", "executable": name}
    if reference is not None:  # a reference in its image is never copied out: nothing to hide
        front["imported_from"] = str(Path(reference).resolve())
    given = task.get("eval_clean_hashes")
    hashes = [str(h).lower() for h in given] if isinstance(given, list) else []  # the loader checks each
    return front | ({"eval_clean_hashes": hashes} if hashes else {})


def _write(task_dir: Path, reference: Path | None, docs: Path | None, folder: Path, name: str,
           images: TaskImages | None) -> list[str]:
    """The problem's folders: docs, the reference executable (none: it stays in the image),
    tests.json and any test code; the docs copied out of the image."""
    if folder.exists():
        shutil.rmtree(folder)
    listed: list[str] = []
    if images is not None:
        listed = copy_docs(images.image, folder / "docs")
    elif reference is not None and docs is not None:
        shutil.copytree(docs, folder / "docs")
        (folder / "reference").mkdir(parents=True)
        shutil.copyfile(reference, folder / "reference" / name)
        (folder / "reference" / name).chmod(0o755)
    tests = task_dir / "tests"
    if tests.is_dir():
        shutil.copytree(tests, folder / "tests", ignore=shutil.ignore_patterns("__pycache__", SUITE_FILE))
    (folder / "tests").mkdir(exist_ok=True)
    shutil.copyfile(task_dir / SUITE_FILE, folder / "tests" / SUITE_FILE)
    return listed


def _set_toml(out: Path) -> None:
    set_toml = out / "set.toml"
    if not set_toml.exists():
        name = out.resolve().name
        set_toml.write_text(f"name = {json.dumps(name)}\ndescription = "
                            f"{json.dumps('Imported from ProgramBench (reproduce problems)')}\n",
                            encoding="utf-8")
