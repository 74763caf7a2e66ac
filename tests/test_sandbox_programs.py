"""Programs still work in a root that shows them nothing else: a C codebase builds with make
and passes its test, a Python codebase passes its pytest tests, `run_python` computes with the
standard library (and only it); and a sandbox that cannot start is a message to the model from
both tools, never an engine error. A real Toolbox on the shipped reproduce set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_shell import SHIPPED, Episode

from gitswarm.engine.shell import OUTPUT_BYTES
from gitswarm.engine.tools import ToolError, tool_schemas
from gitswarm.engine.tools.args import BadArguments
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.sandbox import containment
from gitswarm.sandbox.backends import ORDER_ENV

pytestmark = pytest.mark.skipif(containment().backend is None, reason="no sandbox backend on this machine")
MAKEFILE = ("all: count\n\ncount: count.c\n\tcc -O2 -o count count.c\n\n"
            "check: count\n\tprintf 'a\\nb\\n' | ./count | grep -qx 2\n")
C_COUNTER = "#include <stdio.h>\nint main(void) { int c, n = 0; while ((c = getchar()) != EOF) n += c == '\\n'; " \
            "printf(\"%d\\n\", n); return 0; }\n"
PY_LIB = "def mean(xs):\n    return sum(xs) / len(xs)\n"
PY_TEST = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"


@pytest.fixture
def tally(tmp_path: Path) -> Iterator[Episode]:
    problems = load_set(SHIPPED)
    made = Episode(Memory.create(tmp_path / "run", problems, problem_ids=["tally"]), problems, "tally",
                   tmp_path / "references")
    yield made
    made.tools.close()


def test_a_c_and_a_python_codebase_build_and_pass_their_tests(tally: Episode) -> None:
    for path, text in {"code/c/Makefile": MAKEFILE, "code/c/count.c": C_COUNTER, "code/py/stats.py": PY_LIB,
                       "code/py/test_stats.py": PY_TEST}.items():
        tally.call("write_file", path=path, content=text)
    c = tally.shell("make -C c check && echo C-OK")
    assert c.startswith("exit code 0") and "C-OK" in c, c
    py = tally.shell("cd py && python -m pytest -q")
    assert py.startswith("exit code 0") and "1 passed" in py, py


def test_run_python_computes_with_the_standard_library_only(tally: Episode) -> None:
    out = tally.call("run_python", code=(
        "import fractions, hashlib, json, statistics\n"
        "print(json.dumps([str(fractions.Fraction(1, 3) * 3), statistics.median([3, 1, 2]), "
        "hashlib.sha256(b'x').hexdigest()[:8]]))\n"
        "for name in ('gitswarm', 'pytest', 'pygit2'):\n"
        "    try:\n        __import__(name)\n        print('imported', name)\n"
        "    except ImportError:\n        print('no', name)\n"))
    assert out.startswith("exit code 0") and '["1", 2, "2d711642"]' in out, out
    assert "no gitswarm" in out and "no pytest" in out and "no pygit2" in out


def test_run_python_runs_as_long_as_its_timeout_gives(tally: Episode) -> None:
    """30 s by default, as the model asks up to 600: past it the program is killed, and said so."""
    slow = "import time\ntime.sleep(2)\nprint('woke')\n"
    cut = tally.call("run_python", code=slow, timeout=1)
    assert cut.startswith("timed out after 1 s") and "woke" not in cut, cut
    done = tally.call("run_python", code=slow, timeout=5)
    assert done.startswith("exit code 0") and "woke" in done, done
    with pytest.raises(BadArguments):
        tally.call("run_python", code=slow, timeout=601)


def test_a_sandbox_that_cannot_start_is_a_tool_message(tally: Episode) -> None:
    """Both tools through one boundary: the model reads that the machine failed, and the
    episode goes on (a SandboxError escaping here was once counted as an engine error)."""
    before = os.environ.get(ORDER_ENV)
    os.environ[ORDER_ENV] = ""
    containment.cache_clear()
    try:
        for name, args in (("run_python", {"code": "print(1)"}), ("shell", {"command": "true"})):
            with pytest.raises(ToolError, match=f"{name} could not start a program on this machine"):
                tally.call(name, **args)
    finally:
        os.environ.pop(ORDER_ENV) if before is None else os.environ.update({ORDER_ENV: before})
        containment.cache_clear()



def test_the_tool_descriptions_say_what_the_sandbox_gives() -> None:
    tools = {t["function"]["name"]: t["function"]["description"] for t in tool_schemas("reproduce")}
    assert f"Up to {OUTPUT_BYTES // 1024} KB of stdout" in tools["shell"]
    assert "Only the code folder (the working folder, wherever it lies) persists between commands" in tools["shell"]
    assert "standard library only" in tools["run_python"]
