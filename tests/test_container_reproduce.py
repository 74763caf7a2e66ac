"""A ProgramBench task in its container image, end to end under the container backend (slow).

The small task image of `container_fixture` (the calculator of `reproduce_fixture`, its C
reference as `/workspace/executable`, its docs in `/workspace`): `gitswarm problems import
programbench --registry` from it; grading of a correct, a partial, an empty and a copying
candidate in its `:task` image; and a scripted solve (the real engine, litellm against the fake
server) whose shell runs in the container: a file only the image has is visible, nothing of
the host is, there is no network, the reference runs by its name; then `gitswarm grade`.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest
from container_fixture import MARKER, REGISTRY, task_images
from reproduce_fixture import CORRECT, task_dir
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.run import solve
from gitswarm.fakeserver import FakeReply, serve
from gitswarm.memory.repo import Memory
from gitswarm.models.client import LiteLLMModel
from gitswarm.models.config import ModelConfig
from gitswarm.problems.loader import load_set
from gitswarm.problems.model import Problem
from gitswarm.referee.grades import GradeStore
from gitswarm.referee.reproduce import grade_reproduce
from gitswarm.sandbox import container
from gitswarm.sandbox.engines import engine

pytestmark = pytest.mark.slow
runner = CliRunner()
TOKEN = uuid.uuid4().hex[:12]
PID = "testorg__calculator.abc1234"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The task imported from its image by the real CLI; the set's folder."""
    task_images()
    folder = tmp_path_factory.mktemp("import")
    task = task_dir(folder / "tasks")
    out = folder / "set"
    done = runner.invoke(app, ["problems", "import", "programbench", str(task), "--registry", REGISTRY,
                               "--executable", "calculator", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "docs from its workspace: README.md, docs/usage.md" in done.output
    assert "checked as `gitswarm problems check` does" in done.output
    return out


@pytest.fixture(scope="module")
def problem(imported: Path) -> Problem:
    return load_set(imported).get(PID)


def test_the_import_names_the_images_and_keeps_the_reference_in_them(imported: Path, problem: Problem) -> None:
    cleanroom, grading = task_images()
    assert (problem.image, problem.grade_image) == (cleanroom, grading)
    assert problem.reference_in_image and not (imported / PID / "reference").exists()
    assert sorted(p.relative_to(problem.docs_dir).as_posix() for p in problem.docs_dir.rglob("*") if p.is_file()) \
        == ["README.md", "docs/usage.md"]
    assert not any(p.name == "executable" for p in imported.rglob("*"))


PARTIAL = {"compile.sh": "#!/bin/sh\ncp calculator.sh executable && chmod +x executable\n",
           "calculator.sh": '#!/bin/sh\ncase "$2" in +) echo $(($1 + $3));; -) echo $(($1 - $3));; *) echo 0;; esac\n'}
IN_IMAGE = {**CORRECT, "compile.sh": "#!/bin/sh\ngrep -q only-in-the-task-image /opt/image-only.txt && "
                                     "cp calculator.sh executable && chmod +x executable\n"}
"""The correct candidate, whose build succeeds only where the image's own file is."""


def test_grading_runs_in_the_grading_image(problem: Problem) -> None:
    correct = grade_reproduce(problem, {k: v.encode() for k, v in IN_IMAGE.items()})
    assert (correct.passed, correct.total, correct.error_code) == (3, 3, None), correct.steps
    partial = grade_reproduce(problem, {k: v.encode() for k, v in PARTIAL.items()})
    assert (partial.passed, partial.total) == (2, 3)
    empty = grade_reproduce(problem, {})
    assert (empty.score, empty.error_code) == (0.0, "no_compile_script")


def test_a_copy_of_the_image_reference_scores_nothing(problem: Problem) -> None:
    """The reference's hash is taken in its image; a byte copy in a candidate is removed."""
    assert problem.image is not None
    copied = engine().cli("run", "--rm", "--network", "none", "--entrypoint", "", problem.image,
                          "cat", "/workspace/executable").stdout
    assert copied.startswith(b"\x7fELF")
    grade = grade_reproduce(problem, {"calc.bin": copied,
                                      "compile.sh": b"#!/bin/sh\ncp calc.bin executable && chmod +x executable\n"})
    assert grade.score == 0.0 and grade.error_code == "compile_failed"
    assert "removed calc.bin (a clean hash)" in grade.steps[0].output


PROBE = ("cat /opt/image-only.txt; calculator 6 '*' 7; id -un; ls /work {planted} 2>&1; "
         "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\" 2>&1 | tail -1")
WRITE = ("mkdir -p calc-sh && cd calc-sh && printf '#!/bin/sh\\necho $(($1 $2 $3))\\n' > calculator.sh && "
         "printf '#!/bin/sh\\ncp calculator.sh executable && chmod +x executable\\n' > compile.sh && "
         "sh compile.sh && ./executable 2 + 3 && calculator 2 + 3")


def respond_with(planted: Path):
    def respond(request: dict) -> FakeReply:
        messages = request.get("messages", [])
        if not request.get("tools"):
            return FakeReply(content="calc-sh is the leading codebase.")
        steps = [{"name": "shell", "arguments": {"command": PROBE.format(planted=planted)}},
                 {"name": "shell", "arguments": {"command": WRITE}},
                 {"name": "contribute", "arguments": {"kind": "code", "title": "calculator in sh",
                                                      "summary": "Arithmetic expansion of A OP B."}}]
        done = sum(1 for m in messages if m["role"] == "assistant")
        return FakeReply(tool_calls=[steps[min(done, len(steps) - 1)]])
    return respond


def test_a_scripted_solve_runs_its_shell_in_the_container(imported: Path, tmp_path: Path) -> None:
    planted = Path(f"/tmp/gitswarm-host-only-{TOKEN}")
    planted.write_text("host\n")
    run = tmp_path / "run"
    problem_set = load_set(imported)

    async def scripted():
        async with serve(respond_with(planted)) as server:
            config = ModelConfig(model="openai/gitswarm-scripted", api_base=server.url, api_key="k",
                                 reply_timeout_s=60, backoff_base_s=0.01, backoff_cap_s=0.05)
            model = LiteLLMModel(config)
            cfg = SolveConfig(problems=imported, run=run, model=config.model, problem_ids=(PID,), workers=1,
                              verify=0, budget=1)
            with anyio.fail_after(300):
                return await solve(cfg, problem_set, model, model), server

    try:
        result, server = anyio.run(scripted)
    finally:
        planted.unlink()
    assert result.charged == 1, result.reason
    results = [str(m.get("content")) for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    probe, built = results[0], results[1]
    assert MARKER in probe and "\n42\n" in probe and "agent" in probe, probe
    assert "ls: cannot access '/work'" in probe and f"ls: cannot access '{planted}'" in probe
    assert "Network is unreachable" in probe
    assert built.count("5") >= 2 and "staged under code/" in built, built
    assert container.stop_all() == 0  # the episode's container went with it
    graded = runner.invoke(app, ["grade", str(run), "--all"])
    assert graded.exit_code == 0, graded.output
    assert list(GradeStore(Memory(run)).scores(PID).values()) == [1.0]
