"""A small reproduce problem for tests: ProgramBench's calculator fixture, rebuilt here.

The reference is a C program taking `A OP B` (+ - *) and printing the integer result; the
tests are written in ProgramBench's public layout (`tests/<branch>/eval/tests/test_*.py`, each
calling `./executable`), as the real test code is not public. The real `task.yaml` and
`tests.json` are read from the shared data when present (`SHARED`).
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Mapping
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "programbench"
CALCULATOR = "testorg__calculator.abc1234"
BRANCH = "33128f6b8600"
NAMES = ("test_addition", "test_subtraction", "test_multiplication")

CALC_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: calculator A OP B\n"); return 2; }
    long a = atol(argv[1]), b = atol(argv[3]);
    switch (argv[2][0]) {
    case '+': printf("%ld\n", a + b); return 0;
    case '-': printf("%ld\n", a - b); return 0;
    case '*': printf("%ld\n", a * b); return 0;
    }
    fprintf(stderr, "unknown operator %s\n", argv[2]);
    return 2;
}
"""

TEST_CALCULATOR = textwrap.dedent('''\
    import subprocess


    def _run(a, op, b):
        done = subprocess.run(["./executable", str(a), op, str(b)], capture_output=True, text=True,
                              timeout=20)
        return done.stdout.strip()


    def test_addition():
        assert _run(2, "+", 3) == "5"


    def test_subtraction():
        assert _run(10, "-", 3) == "7"


    def test_multiplication():
        assert _run(4, "*", 3) == "12"
    ''')

TESTS_JSON = """{
  "branches": {
    "33128f6b8600": {
      "ignored": false,
      "ignore_reason": "",
      "tests": [
        "tests.test_calculator.test_addition",
        "tests.test_calculator.test_subtraction",
        "tests.test_calculator.test_multiplication"
      ],
      "ignored_tests": []
    }
  }
}
"""

COMPILE_COPY = "#!/bin/sh\ncp calculator.sh executable && chmod +x executable\n"
CORRECT = {"compile.sh": COMPILE_COPY, "calculator.sh": '#!/bin/sh\necho $(($1 $2 $3))\n'}
"""A correct submission, shaped as the harness's (its log lists calculator.sh, compile.sh)."""
INCORRECT = {"compile.sh": COMPILE_COPY, "calculator.sh": "#!/bin/sh\necho 42\n"}
"""An incorrect one: it prints 42 whatever it is asked, as the harness's output shows."""


def write(folder: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write `files` (relative path -> text) below `folder`; scripts are made executable."""
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        if path.read_bytes().startswith(b"#!"):
            path.chmod(0o755)
    return folder


def compile_reference(folder: Path) -> Path:
    """The C calculator, built with the system's compiler."""
    source = write(folder, {"calc.c": CALC_C}) / "calc.c"
    exe = folder / "calculator"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(source)], check=True)
    return exe


def task_dir(folder: Path, *, tests_json: str | None = None, task_yaml: str | None = None,
             tests: dict[str, str] | None = None) -> Path:
    """A task in ProgramBench's public layout: task.yaml, tests.json and the branch's tests."""
    real = SHARED / "tasks" / CALCULATOR
    yaml_text = task_yaml if task_yaml is not None else (
        (real / "task.yaml").read_text() if real.is_dir() else
        "repository: testorg/calculator\ncommit: abc1234567890abcdef1234567890abcdef123456\n"
        "language: bash\ndifficulty: easy\n")
    json_text = tests_json if tests_json is not None else (
        (real / "tests.json").read_text() if real.is_dir() else TESTS_JSON)
    files = {"task.yaml": yaml_text, "tests.json": json_text,
             **{f"tests/{BRANCH}/eval/tests/{k}": v for k, v in
                (tests or {"test_calculator.py": TEST_CALCULATOR}).items()}}
    return write(folder / CALCULATOR, files)


def reproduce_set(folder: Path, *, tests: dict[str, str] | None = None, tests_json: str = TESTS_JSON,
                  source: str = CALC_C, build: str = "cc -O2 -o calculator calc.c") -> Path:
    """A hand-written reproduce set: the C reference as source with a build command."""
    front = f"---\nid: calc\ntitle: Calculator\nkind: reproduce\nexecutable: calculator\nbuild: {build}\n---\n"
    files = {"calc.md": front + "Rebuild `calculator`: `calculator A OP B` prints the result.\n",
             "calc/docs/README.md": "calculator A OP B: prints A OP B, for OP in + - *.\n",
             "calc/reference/calc.c": source, "calc/tests/tests.json": tests_json,
             **{f"calc/tests/{BRANCH}/eval/tests/{k}": v for k, v in
                (tests or {"test_calculator.py": TEST_CALCULATOR}).items()}}
    return write(folder, files)


TEST_TAC = textwrap.dedent('''\
    import subprocess


    def test_reverses_standard_input():
        done = subprocess.run(["./executable"], input="a\\nb\\nc\\n", capture_output=True, text=True, timeout=20)
        assert done.stdout == "c\\nb\\na\\n"


    def test_reverses_a_file(tmp_path):
        (tmp_path / "in.txt").write_text("1\\n2\\n")
        done = subprocess.run(["./executable", str(tmp_path / "in.txt")], capture_output=True, text=True,
                              timeout=20)
        assert done.stdout == "2\\n1\\n"
    ''')
TAC_TESTS_JSON = json.dumps({"branches": {BRANCH: {"ignored": False, "tests": [
    "tests.test_tac.test_reverses_standard_input", "tests.test_tac.test_reverses_a_file"],
    "ignored_tests": []}}})
TAC_IN_SH = {"compile.sh": "#!/bin/sh\ncp tac.sh executable && chmod +x executable\n",
             "tac.sh": "#!/bin/sh\nsed -n '1!G;h;$p' \"$@\"\n"}
"""A rebuild of tac in sh (sed), which never runs the installed program."""


def installed_copy_set(folder: Path, program: Path, name: str, *, origin: Path | None = None) -> Path:
    """A reproduce set whose reference is a copy of an installed `program` (a ready executable,
    no build), documented as `name`; `imported_from` is `origin` when given."""
    front = (f"---\nid: copy\ntitle: Rebuild {name}\nkind: reproduce\nexecutable: {name}\n"
             + (f"imported_from: {origin}\n" if origin else "") + "---\n")
    files: dict[str, str | bytes] = {
        "copy.md": front + f"Rebuild `{name}`: it prints its input's lines last first.\n",
        "copy/docs/README.md": f"{name} [FILE]: the lines of FILE (or standard input), last first.\n",
        f"copy/reference/{name}": program.read_bytes(), "copy/tests/tests.json": TAC_TESTS_JSON,
        f"copy/tests/{BRANCH}/eval/tests/test_tac.py": TEST_TAC}
    write(folder, files)
    (folder / "copy" / "reference" / name).chmod(0o755)
    return folder
