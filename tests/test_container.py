"""The container backend (`gitswarm/sandbox/container.py`): what a program in a container of a
problem's image sees and may do, and how it ends; the front matter that names an image; the
refusal of such a problem where no engine works.

The tests that start containers are slow and run in the small task image
`tests/container_fixture.py` builds (they skip without a container engine, and fail under CI).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pytest
from container_fixture import MARKER, engine_here, task_images
from reproduce_fixture import BRANCH, TEST_CALCULATOR, TESTS_JSON, task_dir, write
from typer.testing import CliRunner

from gitswarm import sandbox
from gitswarm.cli.main import app
from gitswarm.errors import EnvironmentFault
from gitswarm.problems.loader import check_set
from gitswarm.sandbox import engines
from gitswarm.sandbox.container import Container, run_once
from gitswarm.sandbox.spawn import Limits

runner = CliRunner()
TOKEN = uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def cleanroom() -> str:
    return task_images()[0]


@pytest.fixture
def box(cleanroom: str, tmp_path: Path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "mine.txt").write_text("the tree's own file\n")
    made = Container(cleanroom, [(tree, "/workspace/code")], reference=("calculator", "/workspace/executable"),
                     processes=64)
    yield made, tree
    made.close()


def bash(box: Container, command: str, **limits) -> sandbox.SandboxResult:
    return box.exec(["/bin/bash", "-c", command], cwd="/workspace/code",
                    limits=Limits(**{"wall_seconds": 30.0, **limits}))


@pytest.mark.slow
def test_a_program_sees_the_image_and_its_tree_and_nothing_of_the_host(box) -> None:
    made, _tree = box
    planted = Path(f"/tmp/gitswarm-container-probe-{TOKEN}")
    planted.write_text("the host's file\n")
    try:
        done = bash(made, f"cat /opt/image-only.txt mine.txt; calculator 2 + 3; id -u; ls {planted} /work 2>&1; "
                    "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=3)' 2>&1 "
                    "| tail -1; env | sort")
    finally:
        planted.unlink()
    assert done.ok and done.containment == "container", done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == [MARKER, "the tree's own file", "5", "1000"]  # the image's user, agent
    assert f"ls: cannot access '{planted}': No such file or directory" in done.stdout
    assert "ls: cannot access '/work'" in done.stdout
    assert "Network is unreachable" in done.stdout
    assert "PATH=/opt/gitswarm/reference:" in done.stdout and "API_KEY" not in done.stdout


@pytest.mark.slow
def test_nothing_outlives_its_command_and_a_timeout_kills_everything(box) -> None:
    made, _tree = box
    assert bash(made, "sleep 300 & echo started").stdout == "started\n"
    started = time.monotonic()
    cut = bash(made, "(sleep 200 &) ; sleep 100", wall_seconds=2.0)
    assert cut.timed_out and time.monotonic() - started < 15
    left = bash(made, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
    assert not {"sleep 100", "sleep 200", "sleep 300"} & set(left.stdout.split("  ")), left.stdout
    assert "sleep 3" not in left.stdout and "sleep 2" not in left.stdout and "sleep 1" not in left.stdout


@pytest.mark.slow
def test_the_container_bounds_processes_memory_and_cpu(box) -> None:
    made, _tree = box
    forks = bash(made, "for i in $(seq 100); do sleep 5 & done 2>&1; wait", wall_seconds=20.0)
    assert "fork: retry: resource temporarily unavailable" in (forks.stdout + forks.stderr).lower(), forks
    memory = bash(made, "python3 -c 'b = bytearray(1 << 31)'", memory_bytes=512 << 20)
    assert memory.exit_code != 0 and memory.killed_for_memory, memory
    spin = bash(made, "while :; do :; done", cpu_seconds=1, wall_seconds=20.0)
    assert spin.timed_out and spin.duration_seconds < 15


@pytest.mark.slow
def test_stop_all_kills_the_containers_and_their_programs_return(box) -> None:
    made, _tree = box
    made.start()
    name = made.name
    results: list[sandbox.SandboxResult] = []
    worker = threading.Thread(target=lambda: results.append(bash(made, "sleep 60", wall_seconds=120.0)))
    worker.start()
    time.sleep(1.5)
    assert sandbox.stop_all() >= 1
    worker.join(30)
    assert not worker.is_alive() and results and not results[0].ok
    listed = engines.engine().must("ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}")
    assert name not in listed


@pytest.mark.slow
def test_a_fresh_container_runs_in_its_folder_as_the_workspace(cleanroom: str, tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    (folder / "compile.sh").write_text("printf built > out.txt; ls /workspace\n")
    done = run_once(cleanroom, ["/bin/sh", "compile.sh"], folder, Limits(wall_seconds=60.0), {})
    assert done.ok, done.stderr
    assert "executable" not in done.stdout.split()  # the image's workspace is covered by the folder
    assert (folder / "out.txt").read_text() == "built"
    assert (folder / "out.txt").stat().st_uid == folder.stat().st_uid  # handed back


@pytest.mark.slow
def test_sandbox_check_names_the_container_engine() -> None:
    engine_here()
    done = runner.invoke(app, ["sandbox", "check", "--json"])
    found = json.loads(done.output)["container"]
    assert found["engine"].split()[0] in ("podman", "docker") and found["fix"] is None
    assert "container:" in runner.invoke(app, ["sandbox", "check"]).output


IMAGE_PROBLEM = """---
id: calc
title: Calculator
kind: reproduce
executable: calculator
image: {image}
{extra}---
Rebuild `calculator`.
"""


def image_set(folder: Path, image: str = "localhost/x/calc:task_cleanroom", extra: str = "") -> Path:
    return write(folder, {"calc.md": IMAGE_PROBLEM.format(image=image, extra=extra),
                          "calc/tests/tests.json": TESTS_JSON,
                          f"calc/tests/{BRANCH}/eval/tests/test_calculator.py": TEST_CALCULATOR})


def test_an_image_problem_needs_no_reference_folder(tmp_path: Path) -> None:
    found, defects = check_set(image_set(tmp_path, extra="grade_image: localhost/x/calc:task\n"))
    assert defects == []
    assert found is not None
    problem = found.problems[0]
    assert problem.reference_in_image and problem.reference_dir is None
    assert (problem.image, problem.grading_image) == ("localhost/x/calc:task_cleanroom", "localhost/x/calc:task")


@pytest.mark.parametrize(("image", "extra", "words"), [
    ("Not An Image!", "", "'image' 'Not An Image!' is not an image name"),
    ("localhost/x/calc:task_cleanroom", "grade_image: UPPER\n", "'grade_image' 'UPPER' is not an image name"),
])
def test_a_bad_image_name_is_a_defect_with_its_line(tmp_path: Path, image: str, extra: str, words: str) -> None:
    _found, defects = check_set(image_set(tmp_path, image, extra))
    assert [d for d in defects if words in d.message and d.line in (6, 7)], defects


def test_solve_refuses_an_image_problem_where_no_engine_works(tmp_path: Path, monkeypatch) -> None:
    from gitswarm.cli.solve import in_images

    monkeypatch.setenv(engines.ENGINE_ENV, f"no-such-engine-{TOKEN}")
    engines.found.cache_clear()
    try:
        found, _ = check_set(image_set(tmp_path))
        assert found is not None
        with pytest.raises(EnvironmentFault) as refused:
            in_images(found.problems, {"calc"})
        assert "refusing calc" in str(refused.value) and "install podman" in str(refused.value)
        in_images(found.problems, set())  # not chosen: nothing to refuse
    finally:
        engines.found.cache_clear()


def test_an_import_from_an_image_not_here_writes_nothing(tmp_path: Path) -> None:
    engine_here()
    task = task_dir(tmp_path / "tasks")
    out = tmp_path / "set"
    done = runner.invoke(app, ["problems", "import", "programbench", str(task), "--image",
                               f"localhost/no-such-image-{TOKEN}:task_cleanroom", "-o", str(out)])
    assert done.exit_code == 1, done.output
    assert f"the image localhost/no-such-image-{TOKEN}:task_cleanroom is not on this machine: pull it" in done.output
    assert not out.exists()


def test_sandbox_check_says_what_to_install_without_an_engine(monkeypatch) -> None:
    monkeypatch.setenv(engines.ENGINE_ENV, f"no-such-engine-{TOKEN}")
    engines.found.cache_clear()
    try:
        done = runner.invoke(app, ["sandbox", "check", "--json"])
        found = json.loads(done.output)["container"]
        assert found["engine"] is None and "install podman" in found["fix"]
        assert f"no-such-engine-{TOKEN} is not on PATH" in found["refused"][f"no-such-engine-{TOKEN}"]
    finally:
        engines.found.cache_clear()
