"""What a `reproduce` problem's front matter must hold, checked without running anything.

Keys (folders are relative to the set folder and must lie inside it):

- `executable` (visible): the program's name as its documentation uses it;
- `docs` (visible): folder of documentation copied into the memory, default `<id>/docs/`
  (optional: the statement may be the documentation);
- `reference` (hidden): the reference implementation, default `<id>/reference/`; with `build`
  its source, built by that shell command run in a copy of the folder, else the ready
  executable itself at `reference/<executable>`;
- `tests` (hidden): ProgramBench's layout, default `<id>/tests/`: `tests.json` plus
  `<branch>/eval/tests/test_*.py` for every branch with counted tests;
- `eval_clean_hashes` (hidden): sha256 of files a candidate may not contain;
- `image` (visible): a container image every program of the problem's episodes runs in
  (`sandbox/container.py`); without a `reference` folder the reference is the image's own
  `./executable` in its workspace, run there and never copied out;
- `grade_image` (hidden): the image grading runs `compile.sh` and the tests in (default `image`).
- `imported_from` (hidden): the absolute path the reference executable was imported from,
  which a candidate's sandbox never shows (nor any other copy of the reference).

Building the reference and running the tests is `gitswarm.referee.reproduce_check`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from gitswarm.problems.model import Parts
from gitswarm.problems.suite import SUITE_FILE, SuiteError, missing_code, read_suite

KEYS = ("executable", "docs", "build", "eval_clean_hashes", "imported_from", "image", "grade_image")
"""Front-matter keys only reproduce problems take (besides `reference` and `tests`)."""
EXECUTABLE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,79}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
IMAGE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
"""An image reference as podman and docker take it: [registry/]name[:tag][@digest], lower case."""

Report = Callable[[str | None, str], None]
"""Records a defect: the front-matter key it is about (for its line), and the message."""


def resolve(path: Path, problem_id: str, values: dict[str, object], text: dict[str, str | None],
            defect: Report, at: Callable[[Path, str, int | None], None]) -> Parts:
    """The reproduce fields of `Problem`, reporting each defect; `at` reports one in another file."""
    executable = text["executable"]
    if not executable:
        defect(None, "a reproduce problem needs 'executable': the program's name, e.g. `executable: jq`")
    elif not EXECUTABLE_PATTERN.match(executable):
        defect("executable", f"'executable' {executable!r} must be a plain file name (letters, digits, "
               "'.', '_', '+', '-')")
        executable = None
    image, grade_image = (_image(key, text[key], defect) for key in ("image", "grade_image"))
    if grade_image and not image:
        defect("grade_image", "'grade_image' needs 'image': the image the problem's episodes run in")
    in_image = image is not None and not text["reference"] and not text["build"] \
        and not (path.parent / problem_id / "reference").is_dir()
    docs, reference, tests = (_folder(path, problem_id, key, text[key], defect,
                                      required=key == "tests" or (key == "reference" and not in_image))
                              for key in ("docs", "reference", "tests"))
    origin = text["imported_from"]
    if origin and not origin.startswith("/"):
        defect("imported_from", f"'imported_from' {origin!r} must be an absolute path")
        origin = None
    found: Parts = {"executable": executable, "build": text["build"] or None,
                    "origin": Path(origin) if origin else None,
                    "clean_hashes": _hashes(values.get("eval_clean_hashes"), defect),
                    "docs_dir": docs, "reference_dir": reference, "tests_dir": tests,
                    "image": image, "grade_image": grade_image}
    if isinstance(reference, Path) and executable and not text["build"] \
            and not (reference / executable).is_file():
        defect("reference" if text["reference"] else None,
               f"no {reference / executable}: put the reference executable there, or give a 'build' "
               "command that makes it from the source in that folder")
    if isinstance(tests, Path):
        _check_suite(tests, at)
    return found


def _image(key: str, given: str | None, defect: Report) -> str | None:
    if not given:
        return None
    if not IMAGE_PATTERN.match(given):
        defect(key, f"{key!r} {given[:80]!r} is not an image name: give one as podman and docker take it, "
               "e.g. `programbench/org_1776_repo:task_cleanroom` (lower case)")
        return None
    return given


def _hashes(value: object, defect: Report) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    bad = [str(h) for h in items if not isinstance(h, str) or not SHA256.match(h.strip().lower())]
    if bad:
        defect("eval_clean_hashes", f"'eval_clean_hashes' must be a list of sha256 hex digests; "
               f"{bad[0][:70]!r} is not one")
        return ()
    return tuple(h.strip().lower() for h in items if isinstance(h, str))  # every one, as none is bad


def _folder(path: Path, problem_id: str, key: str, given: str | None, defect: Report,
            required: bool) -> Path | None:
    folder = path.parent / (given or f"{problem_id}/{key}")
    if not folder.resolve().is_relative_to(path.parent.resolve()):
        defect(key, f"{key!r} folder {given!r} lies outside the set folder")
        return None
    if folder.is_dir():
        return folder
    if given or required:
        what = {"reference": "the reference executable or its source",
                "tests": f"{SUITE_FILE} and <branch>/eval/tests/test_*.py",
                "docs": "the program's documentation"}[key]
        defect(key if given else None, f"missing {key} folder {folder}: it must hold {what}")
    return None


def _check_suite(tests: Path, at: Callable[[Path, str, int | None], None]) -> None:
    suite_path = tests / SUITE_FILE
    if not suite_path.is_file():
        at(suite_path, f"missing {SUITE_FILE}: list the test branches and their tests in "
                       "ProgramBench's format", None)
        return
    try:
        suite = read_suite(suite_path)
    except SuiteError as exc:
        at(suite_path, exc.message, exc.line)
        return
    for branch in missing_code(tests, suite):
        at(suite_path, f"branch {branch.id!r} lists {len(branch.counted())} counted test(s) but "
                       f"{tests / branch.id}/eval/tests/ holds no test_*.py file: add its test code",
           branch.line)
