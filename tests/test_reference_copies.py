"""No copy of a reproduce problem's reference is reachable but the one the tools offer: a
candidate that wraps the program installed on the machine (`exec /usr/bin/tac "$@"`, the
issue's `exec /usr/bin/<program>`) scores 0, whether it names the program, finds it on PATH,
or finds a system file with the reference's content under another name; a worker's shell
runs the reference under its name, never the installed program. Real sets whose reference
is a copy of the machine's own `tac`, the real sandbox, real pytest.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from reproduce_fixture import TAC_IN_SH, installed_copy_set, write

from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.plan import EpisodePlan, terms
from gitswarm.engine.references import References
from gitswarm.engine.runview import RunView
from gitswarm.engine.tools import Toolbox
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.problems.loader import load_set
from gitswarm.referee.reproduce import grade_reproduce
from gitswarm.sandbox import containment
from gitswarm.sandbox.copies import copies, refusal

TAC = shutil.which("tac")
pytestmark = [
    pytest.mark.skipif(TAC is None, reason="no `tac` on this machine's PATH to make the reference of"),
    pytest.mark.skipif(containment().backend is None, reason=(
        "no sandbox backend on this machine (bubblewrap or namespaces): nothing can be hidden")),
]


def wrapper(command: str) -> dict[str, str]:
    """A candidate whose compile.sh writes an executable that runs `command`."""
    return {"compile.sh": f"#!/bin/sh\nprintf '#!/bin/sh\\nexec {command} \"$@\"\\n' > executable\n"
                          "chmod +x executable\n"}


@pytest.fixture
def tac_set(tmp_path: Path) -> Path:
    return installed_copy_set(tmp_path / "set", Path(str(TAC)), "tac")


def test_a_rebuild_passes_and_the_tests_measure_the_program(tmp_path: Path, tac_set: Path) -> None:
    problem = load_set(tac_set).get("copy")
    assert grade_reproduce(problem, write(tmp_path / "sed", TAC_IN_SH)).score == 1.0
    assert grade_reproduce(problem, write(tmp_path / "cat", wrapper("cat"))).score == 0.0


@pytest.mark.parametrize("command", [str(Path(str(TAC)).resolve()), "/bin/tac", "tac", "/usr/bin/env tac"])
def test_a_wrapper_around_the_installed_program_scores_nothing(tmp_path: Path, tac_set: Path, command: str) -> None:
    grade = grade_reproduce(load_set(tac_set).get("copy"), write(tmp_path / "wrap", wrapper(command)))
    assert (grade.passed, grade.total, grade.score) == (0, 2, 0.0)
    assert grade.error_code is None and grade.statuses["failure"] == 2


def test_a_system_file_with_the_reference_content_is_hidden_under_any_name(tmp_path: Path) -> None:
    folder = installed_copy_set(tmp_path / "set", Path(str(TAC)), "flip")
    grade = grade_reproduce(load_set(folder).get("copy"), write(tmp_path / "wrap", wrapper(str(TAC))))
    assert (grade.passed, grade.score) == (0, 0.0)


def test_copies_name_the_program_the_content_and_the_file_imported_from(tmp_path: Path) -> None:
    data = Path(str(TAC)).read_bytes()
    origin = write(tmp_path / "built", {"tac": data}) / "tac"
    found = copies(data, "tac", origin)
    assert origin in found and Path(str(TAC)).resolve() in found
    assert Path(str(TAC)).resolve() in copies(data, "flip")  # by content alone
    assert copies(b"#!/bin/sh\necho nothing installed is this\n", "no-such-program-here") == ()


def test_where_nothing_can_be_hidden_the_problem_is_refused_saying_why() -> None:
    found = (Path(str(TAC)),)
    said = refusal("copy", found, "unconfined")
    assert said is not None and f"copy of the reference at {TAC}" in said and "sandbox check" in said
    assert refusal("copy", found, "bubblewrap") is None and refusal("copy", (), "unconfined") is None


def test_a_workers_shell_runs_the_reference_but_not_the_installed_program(tmp_path: Path, tac_set: Path) -> None:
    problems = load_set(tac_set)
    memory = Memory.create(tmp_path / "run", problems)
    index = MemoryIndex()
    indexing.update(index, memory.repo, memory.main())
    cfg = SolveConfig(problems=problems.path, run=memory.path, model="m")
    view = RunView(["copy"])
    ep = EpisodePlan("e00001", "w01", "copy", "reproduce", "Rebuild tac", memory.main(), "tac",
                     terms=terms(cfg, "reproduce"))
    limiter = anyio.CapacityLimiter(2)
    tools = Toolbox(Store(memory), index, view, ep, limiter, References(problems, limiter, tmp_path / "refs"))
    try:
        out = anyio.run(lambda: tools.call("shell", {"command": f"printf '1\\n2\\n' | tac; {TAC} </dev/null; "
                                                                "echo status $?"}))
    finally:
        tools.close()
    assert "\n2\n1\n" in out
    assert "status 126" in out or "Permission denied" in out
