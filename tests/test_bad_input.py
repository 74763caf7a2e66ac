"""A catalogue of bad input to the CLI (issue 6).

Each case runs the real CLI and checks that it answers with one short `gitswarm:` paragraph
(naming the file and line where a file is at fault) and the documented exit code, never a
traceback, and that an existing run it touched is exactly as it was (every ref, and
`git fsck --full`). A full disk is simulated with a file-size limit on a subprocess, a
read-only run with `chmod -R a-w` (as root, in a subprocess without CAP_DAC_OVERRIDE).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest
from conftest import fsck_clean, git, write_set
from demo_run import demo_run
from typer.testing import CliRunner

from gitswarm.cli.common import Exit
from gitswarm.cli.main import app
from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set

runner = CliRunner()
BAD, FAILED = int(Exit.BAD_INPUT), int(Exit.FAILED)
NO_SERVER = ["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1"]
GOOD = "---\nid: {id}\nkind: proof\n---\nProve it.\n"


@dataclass
class Where:
    """The folders a case may point at, made when first asked for (copying a run takes time)."""

    tmp: Path
    factory: pytest.TempPathFactory
    set: Path

    @cached_property
    def run(self) -> Path:
        """A copy of a finished demo run."""
        finished = demo_run(self.factory)  # made once per session, on first use
        return shutil.copytree(finished, self.tmp / "run", copy_function=shutil.copyfile)

    @cached_property
    def plain(self) -> Path:
        """A plain git repository with one commit."""
        plain = self.tmp / "plain"
        plain.mkdir()
        git(plain, "init", "-q")
        git(plain, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
        return plain

    def touched(self) -> list[Path]:
        """The repositories a case was given."""
        return [self.__dict__[name] for name in ("run", "plain") if name in self.__dict__]

    def problems(self, files: dict[str, str | bytes]) -> Path:
        folder = self.tmp / "bad-set"
        folder.mkdir()
        for name, text in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
        return folder

    @property
    def new_run(self) -> Path:
        return self.tmp / "new-run"


@dataclass
class Case:
    """An input (`args` from the folders at hand), its exit code and words the message must hold."""

    args: Callable[[Where], list[str]]
    code: int
    words: tuple[str, ...]
    config: str | None = None
    """A config file's text, given to the command as $GITSWARM_CONFIG."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables set for the command."""


def check_set(files: dict[str, str | bytes]) -> Callable[[Where], list[str]]:
    return lambda w: ["problems", "check", str(w.problems(files))]


def solve(*options: str, files: dict[str, str | bytes] | None = None) -> Callable[[Where], list[str]]:
    def args(w: Where) -> list[str]:
        folder = str(w.problems(files)) if files is not None else str(w.set)
        return ["solve", folder, "--run", str(w.new_run), "--no-tui", *options]
    return args


CASES: dict[str, Case] = {
    # -- problem files -------------------------------------------------------------------
    "no front matter": Case(check_set({"a.md": "Prove it.\n"}), BAD, ("a.md:1", "'---'")),
    "front matter never closed": Case(check_set({"a.md": "---\nid: a\nkind: proof\n"}), BAD,
                                      ("a.md:1", "never closed")),
    "bad YAML, with its line": Case(check_set({"a.md": "---\nid: a\nkind: [proof\n---\nX\n"}), BAD,
                                    ("a.md:3", "invalid YAML")),
    "YAML with a tab": Case(check_set({"a.md": "---\nid: a\n\tkind: proof\n---\nX\n"}), BAD,
                            ("a.md:3", "invalid YAML")),
    "front matter not a mapping": Case(check_set({"a.md": "---\n- a\n---\nX\n"}), BAD, ("a.md:2", "mapping")),
    "unknown kind": Case(check_set({"a.md": "---\nid: a\nkind: essay\n---\nX\n"}), BAD,
                         ("a.md:3", "unknown kind", "proof, answer, program or reproduce")),
    "missing kind": Case(check_set({"a.md": "---\nid: a\n---\nX\n"}), BAD, ("a.md", "missing 'kind'")),
    "answer problem without answer": Case(check_set({"a.md": "---\nid: a\nkind: answer\n---\nX?\n"}), BAD,
                                          ("a.md", "needs a non-empty 'answer'")),
    "duplicate ids": Case(check_set({"a.md": GOOD.format(id="a"), "b.md": GOOD.format(id="a")}), BAD,
                          ("b.md:2", "duplicates the id of a.md")),
    "unsafe id": Case(check_set({"a.md": GOOD.format(id="../x")}), BAD, ("a.md:2", "unsafe id")),
    "missing statement": Case(check_set({"a.md": "---\nid: a\nkind: proof\n---\n"}), BAD,
                              ("a.md:5", "missing statement")),
    "empty file": Case(check_set({"a.md": ""}), BAD, ("a.md:1", "empty file")),
    "binary file": Case(check_set({"a.md": b"---\nid: a\nkind: proof\n---\n\xff\xfe\x00\x01\n"}), BAD,
                        ("a.md:5", "not UTF-8")),
    "a NUL byte": Case(check_set({"a.md": "---\nid: a\nkind: proof\n---\nProve\x00 it.\n"}), BAD,
                       ("a.md:5", "U+0000", "NUL", "text only")),
    "a NUL byte in the front matter": Case(check_set({"a.md": "---\nid: a\x00\nkind: proof\n---\nX\n"}), BAD,
                                           ("a.md:2", "U+0000")),
    "a terminal escape": Case(check_set({"a.md": GOOD.format(id="a") + "\x1b]0;owned\x07\n"}), BAD,
                              ("a.md:6", "U+001B", "escape")),
    "reproduce without executable": Case(
        check_set({"r.md": "---\nid: r\nkind: reproduce\n---\nRebuild it.\n"}), BAD,
        ("r.md", "needs 'executable'")),
    "reproduce with a bad tests.json": Case(
        check_set({"r.md": "---\nid: r\nkind: reproduce\nexecutable: r\n---\nX\n", "r/reference/r": "#!/bin/sh\n",
                   "r/tests/tests.json": '{\n  "branches": {\n    "b": {"tests": ["t"],,}\n  }\n}\n'}), BAD,
        ("tests.json:3", "invalid JSON")),
    "huge file": Case(check_set({"a.md": GOOD.format(id="a") + "x" * 2_000_000}), BAD,
                      ("a.md", "bytes; the limit is")),
    "program without tests": Case(check_set({"p.md": "---\nid: p\nkind: program\n---\nX\n"}), BAD,
                                  ("p.md", "missing test folder")),
    "set.toml bad TOML": Case(check_set({"a.md": GOOD.format(id="a"), "set.toml": "name = \n"}), BAD,
                              ("set.toml:1", "invalid TOML")),
    "set.toml not UTF-8": Case(check_set({"a.md": GOOD.format(id="a"), "set.toml": b"\xff\xfe"}), BAD,
                               ("set.toml", "not UTF-8")),
    "set.toml default of a wrong type": Case(
        check_set({"a.md": GOOD.format(id="a"), "set.toml": 'name = "s"\n[defaults]\nworkers = "many"\n'}),
        BAD, ("set.toml:3", "workers")),
    "set.toml unknown default": Case(
        check_set({"a.md": GOOD.format(id="a"), "set.toml": "[defaults]\nworker = 4\n"}), BAD,
        ("set.toml:2", "unknown setting 'worker'")),
    "empty folder": Case(check_set({}), BAD, ("no problem files",)),
    "not a folder": Case(lambda w: ["problems", "check", str(w.set / "sum.md")], BAD, ("sum.md", "not a folder")),
    "missing folder": Case(lambda w: ["problems", "check", str(w.tmp / "nope")], BAD, ("nope", "not a folder")),
    "a folder named like a problem": Case(lambda w: ["problems", "check", str(_dir_named_md(w))], BAD,
                                          ("b.md", "not a file")),
    "list of a defective set": Case(lambda w: ["problems", "list", str(w.problems({"a.md": "x"}))], BAD,
                                    ("defect", "problems check")),
    "solve a defective set": Case(solve(*NO_SERVER, files={"a.md": "---\nid: a\nkind: [\n---\nX\n"}), BAD,
                                  ("a.md:3", "invalid YAML", "1 defect")),
    "import from a missing file": Case(lambda w: ["problems", "import", "jsonl", str(w.tmp / "x.jsonl"),
                                                  "--out", str(w.tmp / "out")], BAD, ("x.jsonl", "no such file")),
    "import from a folder": Case(lambda w: ["problems", "import", "jsonl", str(w.set), "--out", "o"], BAD,
                                 ("not a file",)),
    "import into a file": Case(lambda w: ["problems", "import", "jsonl", str(_jsonl(w)), "--out",
                                          str(w.set / "sum.md")], BAD, ("sum.md", "must be a folder")),
    "import of a binary file": Case(lambda w: ["problems", "import", "jsonl", str(_jsonl(w, b"\xff\x00\n")),
                                               "--out", "o"], BAD, ("x.jsonl:1", "not UTF-8")),
    "import of an unknown format": Case(lambda w: ["problems", "import", "csv", "x", "--out", "o"], BAD,
                                        ("'csv' is not one of", "--help")),
    "import programbench without a reference": Case(
        lambda w: ["problems", "import", "programbench", str(w.tmp), "--docs", str(w.tmp), "--out", "o"], BAD,
        ("--reference EXE", "--docs DIR")),
    "import programbench from a file": Case(
        lambda w: ["problems", "import", "programbench", str(w.set / "sum.md"), "--reference", "x", "--docs",
                   "d", "--out", "o"], BAD, ("sum.md", "not a folder", "task.yaml")),
    "import programbench without task.yaml": Case(
        lambda w: ["problems", "import", "programbench", str(w.tmp), "--reference", str(w.set / "sum.md"),
                   "--docs", str(w.set), "--out", str(w.tmp / "o")], BAD, ("defect(s) in the task", "nothing written")),
    "grade a missing candidate folder": Case(
        lambda w: ["grade", "--candidate", str(w.tmp / "nope"), "--set", str(w.set), "--problem", "sum"], BAD,
        ("nope", "not a folder")),
    "grade a candidate against a proof": Case(
        lambda w: ["grade", "--candidate", str(w.tmp), "--set", str(w.problems({"a.md": GOOD.format(id="a")})),
                   "--problem", "a"], BAD, ("proof problem", "--candidate grades reproduce")),
    "grade a candidate and a run": Case(
        lambda w: ["grade", str(w.tmp), "--candidate", str(w.tmp), "--set", str(w.set), "--problem", "sum"], BAD,
        ("either a run folder or --candidate",)),
    "grade without a run": Case(lambda w: ["grade"], BAD, ("give the run folder", "--candidate DIR")),
    # -- options --------------------------------------------------------------------------
    "negative budget": Case(solve(*NO_SERVER, "--budget", "-3"), BAD, ("--budget", "greater than")),
    "zero budget": Case(solve(*NO_SERVER, "--budget", "0"), BAD, ("--budget", "greater than")),
    "concurrency 0": Case(solve(*NO_SERVER, "--workers", "0"), BAD, ("--workers 0", "--run url")),
    "concurrency too high": Case(solve(*NO_SERVER, "--workers", "5000"), BAD, ("workers", "1024")),
    "--max-usd not a number": Case(solve(*NO_SERVER, "--max-usd", "lots"), BAD, ("--max-usd", "number")),
    "negative --max-usd": Case(solve(*NO_SERVER, "--max-usd", "-1"), BAD, ("--max-usd", "greater than")),
    "--max-usd without prices": Case(solve(*NO_SERVER, "--max-usd", "5"), BAD, ("--max-usd", "--price-in")),
    "--max-tokens, which reads as per reply": Case(solve(*NO_SERVER, "--max-tokens", "5000"), BAD,
                                                   ("--max-tokens", "--max-total-tokens", "--max-output-tokens")),
    "zero --max-total-tokens": Case(solve(*NO_SERVER, "--max-total-tokens", "0"), BAD, ("--max-total-tokens",)),
    "zero --max-episodes": Case(solve(*NO_SERVER, "--max-episodes", "0"), BAD, ("--max-episodes", "greater than")),
    "negative --max-episodes": Case(solve(*NO_SERVER, "--max-episodes", "-4"), BAD, ("--max-episodes",)),
    "zero --no-progress": Case(solve(*NO_SERVER, "--no-progress", "0"), BAD, ("--no-progress", "greater than")),
    "--no-progress not a number": Case(solve(*NO_SERVER, "--no-progress", "some"), BAD,
                                       ("--no-progress", "integer")),
    "zero --max-output-tokens": Case(solve(*NO_SERVER, "--max-output-tokens", "0"), BAD, ("--max-output-tokens",)),
    "unknown --reasoning-effort": Case(solve(*NO_SERVER, "--reasoning-effort", "extreme"), BAD,
                                       ("--reasoning-effort", "low", "high")),
    "unknown --merger-reasoning-effort": Case(solve(*NO_SERVER, "--merger-reasoning-effort", "max"), BAD,
                                              ("--merger-reasoning-effort",)),
    "unknown --tool-protocol": Case(solve(*NO_SERVER, "--tool-protocol", "xml"), BAD,
                                    ("--tool-protocol", "native", "text")),
    "negative --idle-timeout": Case(solve(*NO_SERVER, "--idle-timeout", "-1"), BAD, ("--idle-timeout",)),
    "zero --reply-timeout": Case(solve(*NO_SERVER, "--reply-timeout", "0"), BAD,
                                 ("reply_timeout_s", "greater than 0")),
    "negative --price-cached-in": Case(solve(*NO_SERVER, "--price-cached-in", "-1"), BAD, ("--price-cached-in",)),
    "negative --price-cache-write": Case(solve(*NO_SERVER, "--price-cache-write", "-0.5"), BAD,
                                         ("--price-cache-write",)),
    "a cache price without the others": Case(solve(*NO_SERVER, "--price-cached-in", "1"), BAD,
                                             ("cached-input price", "input and output prices")),
    "grade with an unknown --reasoning-effort": Case(lambda w: ["grade", str(w.run), "--reasoning-effort", "x"],
                                                     BAD, ("--reasoning-effort",)),
    "negative --time-limit": Case(solve(*NO_SERVER, "--time-limit", "-1"), BAD, ("--time-limit",)),
    "--max-steps 1": Case(solve(*NO_SERVER, "--max-steps", "1"), BAD, ("--max-steps",)),
    "no model given": Case(solve(), BAD, ("no model", "--model")),
    "model without a provider": Case(solve("--model", "nonsense"), BAD, ("provider", "nonsense")),
    "model without its API key": Case(solve("--model", "anthropic/claude-opus-4"), BAD,
                                      ("ANTHROPIC_API_KEY", "--api-base")),
    "model with an empty API key": Case(solve("--model", "anthropic/claude-opus-4"), BAD,
                                        ("ANTHROPIC_API_KEY", "--api-base"), env={"ANTHROPIC_API_KEY": ""}),
    "unknown problem id": Case(solve(*NO_SERVER, "--problem", "nope"), BAD, ("no problem nope",)),
    "missing set": Case(lambda w: ["solve", "problems/nope", "--no-tui", *NO_SERVER], BAD,
                        ("no problem set problems/nope", "shipped sets are answers, demo, imo, programs")),
    "misspelt shipped set": Case(lambda w: ["solve", "dmeo", "--no-tui", *NO_SERVER], BAD,
                                 ("no problem set dmeo", "did you mean demo?", "reproduce")),
    "list a misspelt set": Case(lambda w: ["problems", "list", "imo2"], BAD, ("did you mean imo?",)),
    "worker without a model": Case(lambda w: ["worker", "file:///nowhere.git", "--no-tui"], BAD, ("give --model",)),
    "unknown option": Case(solve(*NO_SERVER, "--wrokers", "2"), BAD, ("no such option", "--help")),
    "unknown command": Case(lambda w: ["sovle"], BAD, ("no such command", "--help")),
    "missing argument": Case(lambda w: ["status"], BAD, ("missing argument", "--help")),
    "unknown --format": Case(lambda w: ["report", str(w.run), "--format", "pdf"], BAD, ("--format", "'pdf'")),
    "report to a missing folder": Case(lambda w: ["report", str(w.run), "-o", str(w.tmp / "no" / "r.md")],
                                       BAD, ("r.md", "no such file")),
    "report onto a folder": Case(lambda w: ["report", str(w.run), "-o", str(w.tmp)], BAD, ("is a directory",)),
    "log --limit -1": Case(lambda w: ["log", str(w.run), "--limit", "-1"], BAD, ("--limit",)),
    "grade an unknown problem": Case(lambda w: ["grade", str(w.run), "--problem", "nope"], BAD,
                                     ("no problem 'nope'",)),
    "grade with 0 judgments": Case(lambda w: ["grade", str(w.run), "--judgments", "0"], BAD, ("--judgments",)),
    "grade against another set": Case(lambda w: ["grade", str(w.run), "--set", str(w.set)], BAD,
                                      ("has no problem", "--set")),
    "resume with another set": Case(lambda w: ["solve", str(w.set), "--run", str(w.run), *NO_SERVER], BAD,
                                    ("run of the set 'demo'", "another --run")),
    "config file missing": Case(solve(*NO_SERVER), BAD, ("GITSWARM_CONFIG", "no such file"), config=""),
    "config file bad TOML": Case(solve(*NO_SERVER), BAD, ("config.toml", "line 1"), config="[solve\n"),
    "config file not UTF-8": Case(solve(*NO_SERVER), BAD, ("config.toml", "not UTF-8"), config="\udcff"),
    "config file unknown setting": Case(solve(*NO_SERVER), BAD, ("config.toml", "unknown setting(s) wrokers"),
                                        config="[solve]\nwrokers = 2\n"),
    "config file wrong type": Case(solve(*NO_SERVER), BAD, ("workers", "integer", "config file"),
                                   config='[solve]\nworkers = "x"\n'),
    "config file negative cap": Case(solve(*NO_SERVER), BAD, ("max_usd", "greater than or equal to 0"),
                                     config="[solve]\nmax_usd = -5\n"),
    "config file max_tokens": Case(solve(*NO_SERVER), BAD, ("max_tokens", "max_total_tokens", "max_output_tokens"),
                                   config="[solve]\nmax_tokens = 1000\n"),
    "config file negative episode cap": Case(solve(*NO_SERVER), BAD, ("max_episodes", "greater than or equal to 1"),
                                             config="[solve]\nmax_episodes = -1\n"),
    "config file zero no_progress": Case(solve(*NO_SERVER), BAD, ("no_progress", "greater than or equal to 1"),
                                         config="[solve]\nno_progress = 0\n"),
    "config file unknown reasoning effort": Case(solve(*NO_SERVER), BAD, ("reasoning_effort", "low"),
                                                 config='[solve]\nreasoning_effort = "max"\n'),
    "config file unknown [grade] setting": Case(lambda w: ["grade", str(w.run)], BAD,
                                                ("unknown setting(s) effort in [grade]", "reasoning_effort"),
                                                config='[grade]\neffort = "high"\n'),
    "config file bad [grade] reasoning effort": Case(lambda w: ["grade", str(w.run)], BAD,
                                                     ("reasoning_effort",), config='[grade]\nreasoning_effort = 3\n'),
}

RUN_COMMANDS = {
    "status": lambda p: ["status", str(p)],
    "log": lambda p: ["log", str(p)],
    "grade": lambda p: ["grade", str(p)],
    "dashboard": lambda p: ["dashboard", str(p)],
    "report": lambda p: ["report", str(p)],
    "show": lambda p: ["show", str(p), "demo-odd-sum"],
    "solve resume": lambda p: ["solve", "demo", "--run", str(p), *NO_SERVER],
}


def _jsonl(w: Where, data: bytes = b'{"id": "a", "problem": "p", "answer": "1"}\n') -> Path:
    (w.tmp / "x.jsonl").write_bytes(data)
    return w.tmp / "x.jsonl"


def _dir_named_md(w: Where) -> Path:
    folder = w.problems({"a.md": GOOD.format(id="a")})
    (folder / "b.md").mkdir()
    return folder


# -- fixtures and helpers -----------------------------------------------------------------

@pytest.fixture
def where(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Where:
    """A clean environment (no config file, no model from the environment) and the folders."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GITSWARM_CONFIG", "GITSWARM_MODEL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return Where(tmp_path, tmp_path_factory, write_set(tmp_path / "set"))


def state(repo: Path) -> tuple[str, bool]:
    """Every ref with its target, and whether `git fsck --full` is clean."""
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)"), fsck_clean(repo)


def assert_one_paragraph(stderr: str, words: tuple[str, ...]) -> None:
    """A short `gitswarm:` paragraph (defect lines may come before it) that names the problem."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert lines and lines[-1].startswith("gitswarm: "), stderr
    assert "" not in [ln.strip() for ln in lines], f"a blank line inside the message:\n{stderr}"
    assert len(lines) <= 4 and len(lines[-1]) <= 420, stderr
    for word in words:
        assert word.lower() in stderr.lower(), f"{word!r} not in:\n{stderr}"


def invoke(args: list[str]):
    result = runner.invoke(app, args)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}")
    assert "Traceback" not in result.output
    return result


# -- the catalogue ------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name: str, where: Where, monkeypatch: pytest.MonkeyPatch):
    case = CASES[name]
    if case.config is not None:
        if case.config:
            (where.tmp / "config.toml").write_text(case.config, errors="surrogateescape")
        monkeypatch.setenv("GITSWARM_CONFIG", str(where.tmp / "config.toml"))
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    args = case.args(where)
    before = [state(repo) for repo in where.touched()]
    result = invoke(args)
    assert result.exit_code == case.code, result.output
    assert_one_paragraph(result.stderr, case.words)
    assert [state(repo) for repo in where.touched()] == before
    assert not where.new_run.exists(), "bad input made a run folder"


@pytest.mark.parametrize("command", list(RUN_COMMANDS))
@pytest.mark.parametrize("target", ["empty folder", "plain git repo", "file", "missing path", "newer run",
                                    "damaged metadata"])
def test_not_a_run(command: str, target: str, where: Where):
    if command == "solve resume" and target in ("empty folder", "missing path"):
        target = "folder of other files"  # for solve, an empty or new folder is where a run starts
    path = _target(where, target)
    before = state(path) if target in ("plain git repo", "newer run", "damaged metadata") else None
    result = invoke(RUN_COMMANDS[command](path))
    assert result.exit_code == BAD, result.output
    words = {"newer run": ("newer gitswarm", "upgrade"), "folder of other files": ("not empty",),
             "file": ("not", "run"), "damaged metadata": ("unreadable run metadata",)}.get(
                 target, ("not a gitswarm run",))
    assert_one_paragraph(result.stderr, (str(path), *words))
    if before is not None:
        assert state(path) == before
    elif target == "empty folder":
        assert not any(path.iterdir())
    elif target == "missing path":
        assert not path.exists()


def _target(where: Where, target: str) -> Path:
    if target == "empty folder":
        (where.tmp / "empty").mkdir()
        return where.tmp / "empty"
    if target == "folder of other files":
        (where.tmp / "other").mkdir()
        (where.tmp / "other" / "notes.txt").write_text("mine\n")
        return where.tmp / "other"
    if target == "plain git repo":
        return where.plain
    if target == "file":
        return where.set / "sum.md"
    if target == "missing path":
        return where.tmp / "nope"
    run = Memory.create(where.tmp / "young-run", load_set(where.set)).path  # a real run, made fast
    meta = json.loads(git(run, "show", "refs/gitswarm/meta:run.json"))
    _set_meta(run, json.dumps(meta | {"format": 99}) if target == "newer run" else "{not json")
    return run


def _set_meta(run: Path, text: str) -> None:
    """Replace the run's metadata (as a newer gitswarm, or damage, would) with plain git."""
    blob = subprocess.run(["git", "-C", str(run), "hash-object", "-w", "--stdin"], input=text,
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "-C", str(run), "mktree"], input=f"100644 blob {blob}\trun.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = git(run, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree,
                 "-p", "refs/gitswarm/meta", "-m", "new metadata").strip()
    git(run, "update-ref", "refs/gitswarm/meta", commit)


def test_older_run_without_a_format_still_opens(where: Where):
    meta = json.loads(git(where.run, "show", "refs/gitswarm/meta:run.json"))
    _set_meta(where.run, json.dumps({k: v for k, v in meta.items() if k != "format"}))
    result = invoke(["status", str(where.run)])
    assert result.exit_code == 0 and not result.stderr, result.output


def test_run_busy(where: Where):
    """Another gitswarm holds the run's lock: refused, and the run is left to it."""
    before = state(where.run)
    with (where.run / "gitswarm.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = invoke(["demo", "--run", str(where.run), "--no-tui"])
    assert result.exit_code == BAD, result.output
    assert_one_paragraph(result.stderr, ("another gitswarm", "is running on", str(where.run)))
    assert state(where.run) == before


# -- the environment: a read-only run, a full disk ------------------------------------------

def cli(args: list[str], cwd: Path, preexec: Callable[[], None]) -> subprocess.CompletedProcess:
    """`python -m gitswarm ...` in a subprocess prepared by `preexec` (limits, capabilities)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSWARM_")} | {"HOME": str(cwd)}
    return subprocess.run([sys.executable, "-m", "gitswarm", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=preexec)


def without_override() -> None:
    """Root ignores file modes; dropping CAP_DAC_OVERRIDE (and friends) from the bounding set
    before exec makes the child root obey them, as any other user does."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def file_size_limit(size: int) -> Callable[[], None]:
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return preexec


@pytest.fixture
def read_only_run(where: Where):
    subprocess.run(["chmod", "-R", "a-w", str(where.run)], check=True)
    try:
        test = subprocess.run([sys.executable, "-c", f"open({str(where.run / 'probe')!r}, 'w')"],
                              capture_output=True, preexec_fn=without_override)
        if test.returncode == 0:
            pytest.skip("cannot make a folder read-only for this user (root without a way to drop "
                        "CAP_DAC_OVERRIDE)")
        yield where.run
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE to make chmod bind root: {exc}")
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(where.run)], check=True)


@pytest.mark.parametrize("args", [["grade", "{run}", "--force"],
                                  pytest.param(["demo", "--run", "{run}", "--no-tui"], marks=pytest.mark.e2e)],
                         ids=["grade", "demo resume"])
def test_read_only_run(args: list[str], read_only_run: Path, where: Where):
    before = state(read_only_run)
    done = cli([a.format(run=read_only_run) for a in args], where.tmp, without_override)
    assert done.returncode == FAILED, done.stderr
    assert_one_paragraph(done.stderr, ("not allowed", "permission denied", "writable"))
    assert state(read_only_run) == before


@pytest.mark.e2e
def test_read_only_run_still_reads(read_only_run: Path, where: Where):
    """Status and report only read: they work on a run nobody may write."""
    for args in (["status", str(read_only_run)], ["report", str(read_only_run), "-f", "json"]):
        done = cli(args, where.tmp, without_override)
        assert done.returncode == 0 and not done.stderr, done.stderr


def test_solve_refuses_a_reference_that_does_not_build_before_any_call(where: Where):
    """`problems check`'s defect, named as it names it, exit 2, no run made, no model called (the
    model's address is a closed port: a call would fail otherwise)."""
    from gitswarm.resources import resolve_set

    broken = shutil.copytree(resolve_set("demo"), where.tmp / "demo")
    source = broken / "demo-shout" / "reference" / "shout.c"
    source.write_text("#include <nowhere.h>\n" + source.read_text())
    result = invoke(["solve", str(broken), "--problem", "demo-shout", "--run", str(where.new_run), "--no-tui",
                     *NO_SERVER])
    assert result.exit_code == BAD, result.output
    assert_one_paragraph(result.stderr, (f"{broken / 'demo-shout.md'}:7: the reference does not build (exit 1",
                                         "nowhere.h", "gitswarm problems check", "nothing was spent"))
    assert not where.new_run.exists()
    checked = invoke(["problems", "check", str(broken)])
    assert checked.exit_code == BAD and checked.stderr.splitlines()[0] == result.stderr.splitlines()[0]


def test_a_new_run_in_a_read_only_folder(where: Where):
    """libgit2 meets the read-only folder first (its GitError is no OSError): one sentence, exit 1."""
    proofs = where.tmp / "proofs"  # no code problem, so no sandbox to make first
    proofs.mkdir()
    (proofs / "p1.md").write_text(GOOD.format(id="p1"))
    parent = where.tmp / "read-only"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        probe = subprocess.run([sys.executable, "-c", f"open({str(parent / 'probe')!r}, 'w')"],
                               capture_output=True, preexec_fn=without_override)
        if probe.returncode == 0:
            pytest.skip("cannot make a folder read-only for this user (root without a way to drop "
                        "CAP_DAC_OVERRIDE)")
        done = cli(["solve", str(proofs), "--run", str(parent / "run"), "--no-tui", *NO_SERVER], where.tmp,
                   without_override)
    finally:
        parent.chmod(0o755)
    assert done.returncode == FAILED, done.stderr
    assert_one_paragraph(done.stderr, ("not allowed", "permission denied", ".run.creating"))
    assert list(parent.iterdir()) == []


@pytest.mark.parametrize("args", [pytest.param(["demo", "--run", "{run}", "--no-tui"], marks=pytest.mark.e2e),
                                  ["grade", "{run}", "--force"]],
                         ids=["demo resume", "grade"])
def test_full_disk_leaves_the_run_intact(args: list[str], where: Where):
    before = state(where.run)
    done = cli([a.format(run=where.run) for a in args], where.tmp, file_size_limit(100))
    assert done.returncode == FAILED, done.stderr
    assert_one_paragraph(done.stderr, ("cannot write", "file too large", "free some disk space"))
    assert state(where.run) == before


@pytest.mark.e2e
def test_full_disk_while_creating_leaves_no_half_run(where: Where):
    """A run that could not be created is removed, so running the command again just works."""
    done = cli(["demo", "--run", str(where.new_run), "--no-tui"], where.tmp, file_size_limit(300))
    assert done.returncode == FAILED, done.stderr
    assert_one_paragraph(done.stderr, ("cannot write", "file too large"))
    assert not where.new_run.exists()


@pytest.mark.parametrize("args", [["demo", "--run", "{run}", "--no-tui"],
                                  ["solve", "demo", "--run", "{run}", "--no-tui", *NO_SERVER]], ids=["demo", "solve"])
def test_a_sandbox_refusal_names_what_caused_it_and_only_options_the_command_has(args: list[str], where: Where):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSWARM_")} | {
        "HOME": str(where.tmp), "GITSWARM_SANDBOX": ""}
    done = subprocess.run([sys.executable, "-m", "gitswarm", *[a.format(run=where.new_run) for a in args]],
                          cwd=where.tmp, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == FAILED, done.stderr
    assert_one_paragraph(done.stderr, ("refusing the code problems", "GITSWARM_SANDBOX=''", "unset it"))
    assert ("--unconfined" in done.stderr) == (args[0] == "solve")
    assert "run as root" not in done.stderr  # the setting is the cause, whoever runs it
    assert not where.new_run.exists()


def test_run_as_root_is_advised_only_to_who_is_not(monkeypatch: pytest.MonkeyPatch):
    from gitswarm.sandbox.backends import how_to_fix

    monkeypatch.delenv("GITSWARM_SANDBOX", raising=False)
    assert ("run as root" in how_to_fix()) == (os.geteuid() != 0)
