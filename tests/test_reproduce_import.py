"""`gitswarm problems import programbench` over the five shared tasks and bad tasks, and
`gitswarm problems check` running reproduce problems (dummy_pass, a failing reference)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from reproduce_fixture import (
    BRANCH,
    CALC_C,
    CALCULATOR,
    SHARED,
    TEST_CALCULATOR,
    TESTS_JSON,
    reproduce_set,
    task_dir,
    write,
)
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.problems.loader import check_set

runner = CliRunner()
TASKS = ["testorg__calculator.abc1234", "jqlang__jq.b33a763", "lfos__calcurse.49180d5",
         "abishekvashok__cmatrix.5c082c6", "ajeetdsouza__zoxide.67ca1bc"]


def inputs(tmp_path: Path) -> list[str]:
    write(tmp_path / "docs", {"README.md": "The manual.\n"})
    write(tmp_path / "exe", {"prog": "#!/bin/sh\nexit 0\n"})
    return ["--reference", str(tmp_path / "exe" / "prog"), "--docs", str(tmp_path / "docs")]


def counted_per_branch(text: str) -> list[int]:
    """Each branch's counted tests, read independently of gitswarm's reader."""
    data = json.loads(re.sub(r",(\s*[}\]])", r"\1", text))["branches"]
    return [0 if b["ignored"] else
            len([t for t in b["tests"] if t not in {i["name"] for i in b["ignored_tests"]}])
            for b in data.values()]


@pytest.mark.needs_data
@pytest.mark.parametrize("task", TASKS)
def test_each_shared_task_imports(tmp_path: Path, task: str) -> None:
    source = SHARED / "tasks" / task
    if not source.is_dir():
        pytest.skip(f"ProgramBench data not present: {source}")
    out = tmp_path / "set"
    result = runner.invoke(app, ["problems", "import", "programbench", str(source), *inputs(tmp_path),
                                 "--out", str(out)])
    counted = counted_per_branch((source / "tests.json").read_text())
    assert f"{len(counted)} branches, {sum(counted)} counted tests" in result.stdout
    # the shared data holds no test code: imported, and said to be ungradable until it is there
    assert result.exit_code == 1 and "have no test code" in result.stderr
    assert (out / task / "tests" / "tests.json").read_bytes() == (source / "tests.json").read_bytes()
    task_yaml = yaml.safe_load((source / "task.yaml").read_text())
    front = yaml.safe_load((out / f"{task}.md").read_text().split("---")[1])
    assert front["kind"] == "reproduce" and front["executable"] == task_yaml["repository"].split("/")[1]
    assert front.get("eval_clean_hashes", []) == task_yaml.get("eval_clean_hashes", [])
    defects = [str(d) for d in check_set(out)[1]]
    assert len(defects) == len([n for n in counted if n]), "one defect per branch without its code"
    lines = (source / "tests.json").read_text().splitlines()
    for defect in defects:
        where, branch = re.match(r".*tests\.json:(\d+): branch '(\w+)'", defect).groups()
        assert f'"{branch}"' in lines[int(where) - 1]


def test_a_task_with_its_test_code_imports_clean(tmp_path: Path) -> None:
    exe = write(tmp_path / "exe", {"calculator": "#!/bin/sh\necho $(($1 $2 $3))\n"}) / "calculator"
    docs = write(tmp_path / "docs", {"README.md": "calculator A OP B\n"})
    task = task_dir(tmp_path / "tasks")
    result = runner.invoke(app, ["problems", "import", "programbench", str(task), "--reference", str(exe),
                                 "--docs", str(docs), "--out", str(tmp_path / "set")])
    assert result.exit_code == 0, result.output
    assert "checked as `gitswarm problems check` does: the reference passes every counted test, an empty " \
           "program passes none" in result.stdout
    front = yaml.safe_load((tmp_path / "set" / f"{CALCULATOR}.md").read_text().split("---")[1])
    assert front["imported_from"] == str(exe.resolve())
    result = runner.invoke(app, ["problems", "check", str(tmp_path / "set")])
    assert result.exit_code == 0, result.output
    problem = check_set(tmp_path / "set")[0].get(CALCULATOR)
    assert sorted(problem.visible_files()) == ["docs/README.md", "statement.md"]
    again = runner.invoke(app, ["problems", "import", "programbench", str(task), "--reference", str(exe),
                                "--docs", str(docs), "--out", str(tmp_path / "set")])
    assert again.exit_code == 2 and "already exists" in again.stderr


def test_every_defect_of_a_task_with_file_and_line(tmp_path: Path) -> None:
    task = task_dir(tmp_path / "tasks", task_yaml="repository: a/b\neval_clean_hashes:\n- nothex\n",
                    tests_json='{\n  "branches": {\n    "b": {"tests": ["t"] "x"}\n  }\n}\n')
    result = runner.invoke(app, ["problems", "import", "programbench", str(task), "--reference",
                                 str(tmp_path / "nope"), "--docs", str(tmp_path / "nodocs"), "--out",
                                 str(tmp_path / "set")])
    assert result.exit_code == 2
    err = result.stderr
    assert f"{task / 'task.yaml'}:2: 'eval_clean_hashes'" in err
    assert f"{task / 'tests.json'}:3: invalid JSON" in err
    assert "nope: the reference executable is not a file" in err
    assert "nodocs: the documentation is not a folder" in err
    assert err.strip().splitlines()[-1].startswith("gitswarm: 4 defect(s) in the task")
    assert not (tmp_path / "set").exists()
    bad_yaml = task_dir(tmp_path / "t2", task_yaml="repository: [a\n")
    result = runner.invoke(app, ["problems", "import", "programbench", str(bad_yaml), *inputs(tmp_path),
                                 "--out", str(tmp_path / "set")])
    assert result.exit_code == 2 and f"{bad_yaml / 'task.yaml'}:2: invalid YAML" in result.stderr


def test_import_needs_reference_and_docs(tmp_path: Path) -> None:
    task = task_dir(tmp_path / "tasks")
    result = runner.invoke(app, ["problems", "import", "programbench", str(task), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "needs --reference EXE" in result.stderr
    result = runner.invoke(app, ["problems", "import", "jsonl", str(task / "task.yaml"), "--docs", "d",
                                 "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "programbench format only" in result.stderr


def test_check_reports_dummy_pass_and_a_failing_reference(tmp_path: Path) -> None:
    dummy = TEST_CALCULATOR + ("\n\ndef test_runs():\n    import subprocess\n"
                               "    assert subprocess.run(['./executable', '1', '+', '1']).returncode == 0\n")
    listing = TESTS_JSON.replace('"tests.test_calculator.test_multiplication"',
                                 '"tests.test_calculator.test_multiplication",\n"eval.tests.test_calculator.test_runs"')
    folder = reproduce_set(tmp_path / "set", tests={"test_calculator.py": dummy}, tests_json=listing,
                           source=CALC_C.replace("a - b", "a + b"))
    result = runner.invoke(app, ["problems", "check", str(folder)])
    assert result.exit_code == 2
    tests = folder / "calc" / "tests" / BRANCH / "eval" / "tests" / "test_calculator.py"
    assert f"{tests}:14: the reference fails tests.test_calculator.test_subtraction (failure" in result.stderr
    assert "(gold_fail)" in result.stderr
    assert f"{tests}:22: eval.tests.test_calculator.test_runs passes for an empty program (dummy_pass)" \
        in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("gitswarm: 2 defect(s)")
    assert runner.invoke(app, ["problems", "check", "--static", str(folder)]).exit_code == 0


def test_check_reports_a_reference_that_does_not_build(tmp_path: Path) -> None:
    folder = reproduce_set(tmp_path / "set", source="int main( {\n")
    result = runner.invoke(app, ["problems", "check", str(folder)])
    assert result.exit_code == 2
    assert f"{folder / 'calc.md'}:6: the reference does not build (exit 1" in result.stderr


def test_import_runs_the_checks_and_names_a_test_an_empty_program_passes(tmp_path: Path) -> None:
    """The held-out task's `test_empty_input` case: exit 0 and no output passes for any program."""
    exe = write(tmp_path / "exe", {"calculator": "#!/bin/sh\necho $(($1 $2 $3))\n"}) / "calculator"
    docs = write(tmp_path / "docs", {"README.md": "calculator A OP B\n"})
    empty = TEST_CALCULATOR + ("\n\ndef test_empty_input():\n    import subprocess\n"
                               "    assert subprocess.run(['./executable', '0', '+', '0']).returncode == 0\n")
    listing = TESTS_JSON.replace('"tests.test_calculator.test_multiplication"',
                                 '"tests.test_calculator.test_multiplication",\n"tests.test_calculator.test_empty_input"')
    task = task_dir(tmp_path / "tasks", tests_json=listing, tests={"test_calculator.py": empty})
    result = runner.invoke(app, ["problems", "import", "programbench", str(task), "--reference", str(exe),
                                 "--docs", str(docs), "--out", str(tmp_path / "set")])
    assert result.exit_code == 1, result.output
    test_file = tmp_path / "set" / CALCULATOR / "tests" / BRANCH / "eval" / "tests" / "test_calculator.py"
    assert (f"{test_file}:22: eval.tests.test_calculator.test_empty_input passes for an empty program (dummy_pass): "
            "make it check the program's output, or list it under ignored_tests in tests.json") in result.stderr
    assert "1 defect(s) in the imported problem: it is written" in result.stderr
    assert (tmp_path / "set" / f"{CALCULATOR}.md").is_file()
