"""The proof that a sandboxed program sees nothing it was not given.

Marker strings are planted in world-readable files a program must not see: another problem
set's answer key under /opt, a file in a user's home under /home, another episode's code
under the host's /tmp, a file in the site-packages of the environment gitswarm runs in, the
run's own hidden parts (its set, copied under /opt: a reference source and a hidden test), and
the installed package's data (a line of the shipped demo reference source). Then `/` is
searched for them (grep over every file, and every name) from each place code runs: the
`shell` tool, `run_python`, `compile.sh` and a hidden-test run, as root; and through the
sandbox itself as a non-root user, under each backend. None is found; a control marker in the
program's own folder is, so the search works. The markers are created and removed here.

The search reads every file a program sees (the system's /usr: about 5 GB here, some 15 s each
when cached, minutes on a busy CI machine), hence `slow`; the unconfined control search reads
only where the markers were planted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_shell import Episode

from gitswarm.memory.repo import Memory
from gitswarm.problems.loader import load_set
from gitswarm.problems.suite import read_suite
from gitswarm.referee.builds import reference_executable
from gitswarm.referee.reproduce import hidden, run_branch
from gitswarm.referee.submission import compile_tree
from gitswarm.resources import data_dir, resolve_set
from gitswarm.sandbox import containment

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(containment().backend is None, reason="no sandbox backend on this machine")]
TOKEN = uuid.uuid4().hex[:12]
SEARCH = r'''
import os, subprocess, sys
words, _, roots = " ".join(sys.argv[1:]).partition(" -- ")
markers = [bytes.fromhex(h).decode() for h in words.split()]
everything = [os.path.join("/", n) for n in os.listdir("/") if n not in ("proc", "sys", "dev")] + ["/dev/shm"]
tops = roots.split() or everything
pats = [a for m in markers for a in ("-e", m)]
grep = subprocess.run(["grep", "-rlsF", "--devices=skip", *pats, *tops], capture_output=True, text=True,
                      env={**os.environ, "LC_ALL": "C"}).stdout.splitlines()
found = set()
for path in grep:
    with open(path, errors="replace") as f:
        text = f.read()
    found |= {m for m in markers if m in text}
for top in tops:
    for folder, dirs, files in os.walk(top):
        found |= {m for m in markers for name in dirs + files if m in name}
print("FOUND", *sorted(m.encode().hex() for m in found), "IN", *grep)
'''
SHIPPED_LINE = "copy a file or standard input to standard output, ASCII letters upper-cased"
"""A line of the shipped demo reference (demo-shout/reference/shout.c)."""


def marker(name: str) -> str:
    return f"gitswarm-probe-{TOKEN}-{name}"


CONTROL = marker("control")
HIDDEN_TEST = marker("hidden-test")


def command(roots: tuple[Path, ...] = ()) -> str:
    """The search as one shell command: the markers as hex, so no file of the program holds them;
    over all of `/` (the whole view of a program), or over `roots` alone."""
    words = " ".join(m.encode().hex() for m in [*SECRETS, HIDDEN_TEST, CONTROL])
    where = f" -- {' '.join(str(r) for r in roots)}" if roots else ""
    return f"""python3 -c "exec(bytes.fromhex('{SEARCH.encode().hex()}'))" {words}{where}"""


SECRETS: list[str] = []


def found(output: str) -> set[str]:
    line = next(line for line in output.splitlines() if line.startswith("FOUND"))
    return {bytes.fromhex(h).decode() for h in line.split(" IN ")[0].split()[1:]}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o644)


@pytest.fixture(scope="module")
def planted() -> Iterator[Path]:
    """The markers in place (and the run's set copied under /opt), removed afterwards."""
    opt, home, tmp = Path(f"/opt/gitswarm-probe-{TOKEN}"), Path(f"/home/gitswarm-probe-{TOKEN}"), \
        Path(f"/tmp/gitswarm-code-probe-{TOKEN}")
    site = Path(sysconfig.get_path("purelib")) / f"gitswarm_probe_{TOKEN}.txt"
    shipped = data_dir("problems") / "demo" / "demo-shout" / "reference" / "shout.c"
    assert SHIPPED_LINE in shipped.read_text()
    try:
        _write(opt / "other-set" / "answers.md", f"answer key: {marker('other-set')}\n")
        _write(home / "notes.txt", f"{marker('home')}\n")
        _write(tmp / "code" / "main.c", f"/* {marker('host-tmp')} */\n")
        _write(site, f"{marker('site-packages')}\n")
        the_set = opt / "set"
        shutil.copytree(resolve_set("demo"), the_set)
        problem = the_set / "demo-shout"
        with (problem / "reference" / "shout.c").open("a") as f:
            f.write(f"/* {marker('reference')} */\n")
        tests = problem / "tests" / "5a0b1c2d3e4f" / "eval" / "tests"
        with (tests / "test_shout.py").open("a") as f:
            f.write(f"# {HIDDEN_TEST}\n")
        conftest = tests / "conftest.py"  # the search takes longer than a call's 20 s
        conftest.write_text(conftest.read_text().replace("timeout=20", "timeout=600"))
        for path in [opt, home, tmp, *opt.rglob("*"), *home.rglob("*"), *tmp.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        SECRETS[:] = [marker(n) for n in ("other-set", "home", "host-tmp", "site-packages", "reference")]
        SECRETS.append(SHIPPED_LINE)
        yield the_set
    finally:
        for path in (opt, home, tmp):
            shutil.rmtree(path, ignore_errors=True)
        site.unlink(missing_ok=True)


@pytest.fixture
def episode(planted: Path, tmp_path: Path) -> Iterator[Episode]:
    problems = load_set(planted)
    memory = Memory.create(tmp_path / "run", problems, problem_ids=["demo-shout"])
    made = Episode(memory, problems, "demo-shout", tmp_path / "references")
    made.call("write_file", path="code/control.txt", content=CONTROL + "\n")
    yield made
    made.tools.close()


def test_the_shell_sees_none(episode: Episode) -> None:
    out = episode.shell(command(), timeout=600)
    assert found(out) == {CONTROL}, out


def test_run_python_sees_none(episode: Episode) -> None:
    words = [m.encode().hex() for m in [*SECRETS, HIDDEN_TEST, CONTROL]]
    code = f"import sys\nsys.argv[1:] = {words!r}\nexec(bytes.fromhex('{SEARCH.encode().hex()}'))\n"
    out = episode.call("run_python", code=code, timeout=600)
    assert found(out) == {CONTROL}, out


def test_compile_sh_and_a_hidden_test_run_see_none(planted: Path, tmp_path: Path) -> None:
    problem = load_set(planted).get("demo-shout")
    tree, scratch = tmp_path / "submission", tmp_path / "grading"
    tree.mkdir()
    scratch.mkdir()
    (tree / "control.txt").write_text(CONTROL + "\n")
    (tree / "compile.sh").write_text(f"{command()} > found.txt\nprintf '#!/bin/sh\\ncat\\n' > executable\n")
    hide = hidden(problem, scratch, reference_executable(problem, scratch / "reference", 900.0))
    compile_tree(tree, set(), 900.0, [], hide, scratch / "stash" / "executable")
    assert found((tree / "found.txt").read_text()) == {CONTROL}
    work = tmp_path / "branch"  # the branch's files and ./executable: its own hidden test is in view
    report = work / "found.txt"
    search = f"if [ ! -e {report} ]; then {command()} > {work}/.found && mv {work}/.found {report}; fi"
    branch = read_suite(problem.tests_dir / "tests.json").branches[0]
    cases, step = run_branch(problem.tests_dir, branch, f"#!/bin/sh\n{search}\ncat\n".encode(), work, 900.0,
                             hide)
    assert cases and report.is_file(), step.output
    assert found(report.read_text()) == {HIDDEN_TEST}


NON_ROOT = r'''
import os, sys
from gitswarm.sandbox import Limits, containment, permit_unconfined, run
command, control = sys.argv[1], sys.argv[2]
if os.environ["GITSWARM_SANDBOX"] == "":
    permit_unconfined()
result = run(["/bin/sh", "-c", command], files={"control.txt": control.encode()},
             limits=Limits(wall_seconds=600, cpu_seconds=600, memory_bytes=2 << 30))
print(containment().name, result.uid)
print(result.stdout, result.stderr)
'''


@pytest.mark.parametrize("backend", ["bwrap", "namespaces"])
def test_a_non_root_user_sees_none(planted: Path, backend: str) -> None:
    """As `nobody`, with the system's Python (the test's own lies in /root, closed to others):
    the sandbox every tool goes through, under each backend."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists():
        pytest.skip("needs root (to become nobody), setpriv and /usr/bin/python3")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[1]), "GITSWARM_SANDBOX": backend,
           "HOME": "/tmp", "LC_ALL": "C.UTF-8"}
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                           "-c", NON_ROOT, command(), CONTROL], capture_output=True, text=True,
                          env=env, timeout=900, cwd="/tmp")
    if "cannot make a sandbox" in done.stderr:
        pytest.skip(f"no {backend} sandbox for a non-root user here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    name, uid = done.stdout.split()[:2]
    assert name == backend and uid == "None"
    assert found(done.stdout) == {CONTROL}, done.stdout


def test_unconfined_the_search_finds_every_marker(planted: Path) -> None:
    """The markers are there to be found: the same search, with no backend (unconfined), finds
    each of them but the site-packages one, which the test's own interpreter (not the one run)
    holds. It searches where they were planted and its working folder, not the whole host,
    whose every file a CI machine's 600 s were once too few to read."""
    env = {**os.environ, "GITSWARM_SANDBOX": ""}
    roots = (planted.parent, Path(f"/home/gitswarm-probe-{TOKEN}"), Path(f"/tmp/gitswarm-code-probe-{TOKEN}"),
             data_dir("problems"), Path("."))
    done = subprocess.run([sys.executable, "-c", NON_ROOT, command(roots), CONTROL], capture_output=True, text=True,
                          env=env, timeout=900, cwd="/tmp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "unconfined"
    assert found(done.stdout) >= {CONTROL, HIDDEN_TEST, *SECRETS} - {marker("site-packages")}
