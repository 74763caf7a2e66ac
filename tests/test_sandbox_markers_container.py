"""The marker test of `test_sandbox_markers.py` under the container backend: the same markers
planted on the host, the same search of `/`, from the `shell` tool, `run_python`, `compile.sh`
and a hidden-test run of the demo's reproduce problem given an image (the small task image of
`container_fixture`). None is found; the control marker in the program's own folder is, and
the hidden test's in its branch's folder. Slow; skips without a container engine (fails under CI).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from container_fixture import task_images
from test_sandbox_markers import CONTROL, HIDDEN_TEST, SEARCH, SECRETS, command, found, planted
from test_shell import Episode

from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.problems.suite import read_suite
from gitswarm.referee.reproduce import run_branch
from gitswarm.referee.submission import compile_tree
from gitswarm.sandbox import programs_in
from gitswarm.sandbox.container import image

pytestmark = pytest.mark.slow
__all__ = ["planted"]  # the host's markers, planted (and removed) by the host's marker test's fixture


@pytest.fixture(scope="module")
def in_image(planted: Path) -> Path:
    """The planted set, its reproduce problem given the task image (under the planted folder)."""
    image = task_images()[0]
    the_set = planted.parent / "image-set"
    shutil.copytree(planted, the_set)
    problem = the_set / "demo-shout.md"
    problem.write_text(problem.read_text().replace("kind: reproduce\n", f"kind: reproduce\nimage: {image}\n", 1))
    return the_set


@pytest.fixture
def episode(in_image: Path, tmp_path: Path) -> Iterator[Episode]:
    problems = load_set(in_image)
    assert problems.get("demo-shout").image
    memory = Memory.create(tmp_path / "run", problems, problem_ids=["demo-shout"])
    made = Episode(memory, problems, "demo-shout", tmp_path / "references")
    made.call("write_file", path="code/control.txt", content=CONTROL + "\n")
    yield made
    made.tools.close()


def test_the_shell_in_its_container_sees_none(episode: Episode) -> None:
    out = episode.shell(command() + "; shout <<< hello", timeout=600)
    assert found(out) == {CONTROL}, out
    assert "HELLO" in out  # the reference, built in the image, runs by its name


def test_run_python_in_the_image_sees_none(episode: Episode) -> None:
    words = [m.encode().hex() for m in [*SECRETS, HIDDEN_TEST, CONTROL]]
    code = f"import sys\nsys.argv[1:] = {words!r}\nexec(bytes.fromhex('{SEARCH.encode().hex()}'))\n"
    out = episode.call("run_python", code=code)
    assert found(out) == {CONTROL}, out


def test_compile_sh_and_a_hidden_test_run_in_the_image_see_none(in_image: Path, tmp_path: Path) -> None:
    problem = load_set(in_image).get("demo-shout")
    tree = tmp_path / "submission"
    tree.mkdir()
    (tree / "control.txt").write_text(CONTROL + "\n")
    (tree / "compile.sh").write_text(f"{command()} > found.txt\nprintf '#!/bin/sh\\ncat\\n' > executable\n")
    with programs_in(problem.grading_image):
        compile_tree(tree, set(), 900.0, [], (), tmp_path / "stash" / "executable")  # nothing to hide in there
        assert found((tree / "found.txt").read_text()) == {CONTROL}
        work = tmp_path / "branch"  # the branch's files and ./executable: its own hidden test is in view
        at = image(str(problem.grading_image)).workdir  # where the branch's folder is in the container
        search = f"if [ ! -e {at}/found.txt ]; then {command()} > {at}/.found && mv {at}/.found {at}/found.txt; fi"
        branch = read_suite(problem.tests_dir / "tests.json").branches[0]
        cases, step = run_branch(problem.tests_dir, branch, f"#!/bin/sh\n{search}\ncat\n".encode(), work, 900.0)
    assert cases and (work / "found.txt").is_file(), step.output
    assert found((work / "found.txt").read_text()) == {HIDDEN_TEST}
