"""The real CLI, through typer's runner and as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.contribution import Contribution
from gitswarm.memory.repo import Memory

runner = CliRunner()


def test_version_and_help():
    assert runner.invoke(app, ["--version"]).output.startswith("gitswarm ")
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "problems" in result.output and "Exit codes" in result.output


def test_solve_help_in_panels_with_readable_placeholders():
    text = runner.invoke(app, ["solve", "--help"]).output
    panels = [line.rstrip(":") for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert panels == ["Arguments", "Run", "Model", "Budget and caps", "Verification", "Context of an episode", "Output",
                      "Remote (with --run URL)", "Prices", "Options"]
    assert text.index("--budget") < text.index("--mirror")  # remote-only options come last
    assert "<list[str]>" not in text and "range>" not in text and "<float" not in text
    assert "-C," not in text  # `git -C` means another thing a few lines away in the README
    assert "--no-progress N" in text and "A count, not a switch" in text


def test_worker_takes_solve_output_options():
    text = runner.invoke(app, ["worker", "--help"]).output
    assert "--tui / --no-tui" in text and "--json" in text and "-C," not in text
    result = runner.invoke(app, ["worker", "file:///nowhere.git", "--no-tui"], env={"GITSWARM_MODEL": ""})
    assert result.exit_code == 2 and "give --model" in result.stderr  # --no-tui parsed; --model is what lacks


def test_module_entry_point_and_light_start():
    done = subprocess.run([sys.executable, "-m", "gitswarm", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("gitswarm ")
    probe = ("import sys; from gitswarm.cli.main import app; "
             "print(sorted(m for m in ('litellm', 'textual', 'pygit2', 'git') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # nothing heavy before a command needs it


def test_problems_check_clean_and_defective(problem_dir: Path):
    result = runner.invoke(app, ["problems", "check", str(problem_dir)])
    assert result.exit_code == 0, result.output
    assert "3 problems (1 answer, 1 program, 1 proof), no defects" in result.output
    (problem_dir / "bad.md").write_text("---\nkind: essay\n---\nText\n")
    result = runner.invoke(app, ["problems", "check", str(problem_dir)])
    assert result.exit_code == 2
    assert "bad.md:2: unknown kind 'essay'" in result.output
    assert "Traceback" not in result.output


def test_problems_check_missing_folder(tmp_path: Path):
    result = runner.invoke(app, ["problems", "check", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "not a folder" in result.output


def test_problems_list_table_and_json(problem_dir: Path):
    result = runner.invoke(app, ["problems", "list", str(problem_dir)])
    assert result.exit_code == 0 and result.output.splitlines()[0].startswith("ID")
    rows = json.loads(runner.invoke(app, ["problems", "list", str(problem_dir), "--json"]).output)
    assert [(r["id"], r["kind"]) for r in rows] == [("odd", "proof"), ("rev", "program"), ("sum", "answer")]
    assert "HIDDEN" not in json.dumps(rows)


def test_problems_import_jsonl_then_check(tmp_path: Path):
    source = tmp_path / "set.jsonl"
    source.write_text('{"id": "q1", "problem": "What is 1+1?", "answer": 2}\n'
                      '{"id": "q2", "problem": "What is 2+2?"}\n')
    out = tmp_path / "out"
    result = runner.invoke(app, ["problems", "import", "jsonl", str(source), "--out", str(out)])
    assert result.exit_code == 2 and "row 2" in result.output and not out.exists()
    result = runner.invoke(app, ["problems", "import", "jsonl", str(source), "--out", str(out),
                                 "--on-error", "skip"])
    assert result.exit_code == 1 and "wrote 1 problems" in result.output
    assert runner.invoke(app, ["problems", "check", str(out)]).exit_code == 0


def test_log_shows_contributions_and_rejects_non_runs(memory: Memory, tmp_path: Path):
    memory.contribute(Contribution(problem="sum", episode="e1", worker="w07", kind="lemma",
                                   title="seven is prime", files={"lemmas/p.md": "x"},
                                   parent=memory.main(), op="e1-c", summary="Because."))
    memory.compose()
    result = runner.invoke(app, ["log", str(memory.path), "--problem", "sum"])
    assert result.exit_code == 0 and "lemma(sum): seven is prime" in result.output
    assert "w07" in result.output and "Because." in result.output
    oneline = runner.invoke(app, ["log", str(memory.path), "--oneline", "--kind", "merge"]).output
    assert len(oneline.splitlines()) == 1 and "merge:" in oneline
    result = runner.invoke(app, ["log", str(tmp_path)])
    assert result.exit_code == 2 and "not a gitswarm run" in result.output


def test_plain_progress_shows_the_budget_as_a_bar(capsys):
    from gitswarm.cli.progress import bar, printer
    from gitswarm.core.events import event_of

    assert bar(6, 20, width=10) == "[###.......]  6/20"
    show = printer()
    show(event_of("run_started", {"run": "r", "workers": 2, "budget": 4, "charged": 0}))
    show(event_of("committed", {"episode": "e00001", "worker": "w01", "problem": "p", "commit": "abc",
                             "charged": 1}))
    assert "[#####...............] 1/4 e00001 w01 committed to p (abc)" in capsys.readouterr().out


def test_status_says_nominations_as_the_dashboard_and_report_do(problem_dir: Path, tmp_path: Path):
    from gitswarm.problems.loader import load_set

    Memory.create(tmp_path / "run", load_set(problem_dir))
    result = runner.invoke(app, ["status", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if line.startswith("PROBLEM"))
    assert "NOMINATIONS" in header and "VOTES" not in header
    rows = result.stdout.splitlines()[result.stdout.splitlines().index(header) + 1:]
    assert [r.split()[0] for r in rows] == ["odd", "rev", "sum"]
    assert all(len(r) >= header.index("NOMINATIONS") + len("NOMINATIONS") for r in rows)  # the column lines up


def test_problems_help_names_every_shipped_set():
    from gitswarm.resources import shipped_sets

    text = " ".join(runner.invoke(app, ["problems", "list", "--help"]).output.split())
    assert ", ".join(shipped_sets()) in text


def test_a_run_in_use_is_refused_before_the_model_library_loads(tmp_path: Path, problem_dir: Path):
    """A second `solve` on a run another gitswarm holds answers at once (it took 17-23 s, the
    time litellm takes to load): exit 2, nothing changed, litellm never imported."""
    import fcntl

    from gitswarm.core.runfiles import LOCK_NAME
    from gitswarm.problems.loader import load_set

    Memory.create(tmp_path / "run", load_set(problem_dir), run_id="busy")
    script = ("import sys\nfrom gitswarm.cli.main import app\ntry:\n    app()\n"
              "finally:\n    print('litellm loaded' if 'litellm' in sys.modules else 'litellm not loaded')\n")
    with (tmp_path / "run" / LOCK_NAME).open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = subprocess.run([sys.executable, "-c", script, "solve", str(problem_dir), "--run", str(tmp_path / "run"),
                               "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--no-tui"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "another gitswarm" in done.stderr, done.stderr
    assert "litellm not loaded" in done.stdout


def test_every_roles_model_is_checked_for_credentials_before_the_run(tmp_path: Path, problem_dir: Path,
                                                                     monkeypatch):
    """A reviewer (or merger) model on a provider whose key is missing is refused at the start
    with what to set, naming its role, not at its first call; the workers' model on a local
    server (OPENAI_API_BASE) needs none. (With --api-base every role goes to that server, a
    proxy may hold the keys, and nothing is asked.)"""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")
    base = ["solve", str(problem_dir), "--run", str(tmp_path / "run"), "--model", "openai/local",
            "--workers", "3", "--no-tui"]
    for flag, role in (("--reviewer-model", "the reviewer's model"), ("--merger-model", "the merger's model")):
        result = runner.invoke(app, [*base, flag, "anthropic/claude-opus-4"])
        assert result.exit_code == 2, result.output
        assert f"{role}: " in result.output and "ANTHROPIC_API_KEY" in result.output, result.output
        assert not (tmp_path / "run").exists()  # nothing made, nothing spent
