"""Shared fixtures: small problem sets and run repositories written under tmp_path; the
`needs_data` marker's skip and its line in the summary."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_model import local_server, local_server_fc  # noqa: F401  (fixtures: the real small model's servers)

from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.remote.daemon import GitDaemon, bare, daemon_path

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
"""The third-party benchmark files beside a clone (`../shared/data`): read by the tests marked
`needs_data`, which skip in a clone without them, and are counted in the summary either way."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the `needs_data` tests with one reason when ../shared/data is absent."""
    if SHARED_DATA.is_dir():
        return
    skip = pytest.mark.skip(reason=f"needs_data: no benchmark files at {SHARED_DATA}")
    for item in items:
        if item.get_closest_marker("needs_data"):
            item.add_marker(skip)


_data_outcomes: dict[str, tuple[str, str]] = {}
"""What became of each `needs_data` test: (passed | failed | skipped, the skip's reason)."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Reports carry their markers' names in `keywords`, also when an xdist worker sends them.
    if "needs_data" not in report.keywords or _data_outcomes.get(report.nodeid, ("",))[0] == "failed":
        return
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _data_outcomes[report.nodeid] = ("skipped", reason.removeprefix("Skipped: ").removeprefix("needs_data: "))
    elif report.failed or report.when == "call":
        _data_outcomes[report.nodeid] = (report.outcome, "")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """One line for the tests that read ../shared/data, so a run without it says so."""
    if not _data_outcomes:
        return
    reasons = sorted({reason for outcome, reason in _data_outcomes.values() if outcome == "skipped"})
    skipped = sum(outcome == "skipped" for outcome, _ in _data_outcomes.values())
    line = f"needs_data: {len(_data_outcomes) - skipped} of {len(_data_outcomes)} test(s) ran against {SHARED_DATA}"
    if skipped:
        line += f"; {skipped} skipped: " + "; ".join(reasons)
    terminalreporter.write_sep("-", "shared data")
    terminalreporter.write_line(line, yellow=bool(skipped), green=not skipped)


ANSWER = """---
id: sum
title: A sum
kind: answer
source: test fixture
answer: "HIDDEN-ANSWER-7431"
solution: "HIDDEN-SOLUTION-TEXT"
---
What is $3 + 4$?
"""

PROOF = """---
id: odd
title: Odd squares
kind: proof
grading: |
  HIDDEN-GRADING-GUIDE: 7 for a full proof.
---
Prove that the square of an odd number is odd.
"""

PROGRAM = """---
id: rev
title: Reverse
kind: program
---
Write `solution.py` with `def rev(s: str) -> str`.
"""


def write_set(folder: Path) -> Path:
    """A three-problem set (answer, proof, program) with hidden parts marked HIDDEN-."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sum.md").write_text(ANSWER)
    (folder / "odd.md").write_text(PROOF)
    (folder / "rev.md").write_text(PROGRAM)
    (folder / "rev" / "tests").mkdir(parents=True)
    (folder / "rev" / "tests" / "test_rev.py").write_text(
        "from solution import rev\n\ndef test_rev():\n    assert rev('ab') == 'ba'  # HIDDEN-TEST\n")
    (folder / "rev" / "starter").mkdir()
    (folder / "rev" / "starter" / "solution.py").write_text("def rev(s):\n    return s\n")
    return folder


@pytest.fixture
def problem_dir(tmp_path: Path) -> Path:
    return write_set(tmp_path / "set")


@pytest.fixture
def memory(tmp_path: Path, problem_dir: Path) -> Memory:
    return Memory.create(tmp_path / "run", load_set(problem_dir), run_id="test-run")


def git(repo: Path, *args: str) -> str:
    """Run the real git CLI in `repo` and return its output."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def fsck_clean(repo: Path) -> bool:
    """`git fsck --full --strict` passes; dangling objects (unused trees) are not damage."""
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--full", "--strict"],
                          capture_output=True, text=True)
    problems = [ln for ln in (done.stdout + done.stderr).splitlines()
                if ln.strip() and not ln.startswith("dangling ")]
    return done.returncode == 0 and not problems


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[GitDaemon]:
    """A running `git daemon` with pushes enabled, serving `tmp_path/served` on loopback."""
    program = daemon_path()
    if program is None:
        pytest.skip("git daemon is not installed here (no git-daemon under `git --exec-path`)")
    daemon = GitDaemon(program, tmp_path / "served")
    daemon.base.mkdir()
    daemon.start()
    yield daemon
    daemon.stop()


@pytest.fixture(params=["file", "git-daemon"])
def remote_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty bare repository as a remote URL: a file:// path, then the same over git://."""
    if request.param == "file":
        return bare(tmp_path / "remote.git").as_uri()
    daemon = request.getfixturevalue("git_daemon")
    bare(daemon.base / "run.git")
    return daemon.url("run.git")


MODEL_LATENCY_S = "0.1"


@pytest.fixture
def model_server() -> Iterator[str]:
    """The demo's scripted model behind the fake server, as a process of its own (for tests
    that run the real CLI in several processes); yields its api_base."""
    yield from brain_server(MODEL_LATENCY_S)


def brain_server(latency_s: str) -> Iterator[str]:
    """`model_server` with another latency per call."""
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("brain_server.py")), latency_s],
                              stdout=subprocess.PIPE, text=True)
    try:
        yield server.stdout.readline().strip()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
