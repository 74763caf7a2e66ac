"""The sandbox contains what untrusted programs do: time, memory, forks, network, files.

Every test runs under each backend this machine has (bubblewrap and the launcher's own
namespaces), and is skipped, with the backend's reason, under one it lacks."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gitswarm.sandbox import Limits, SandboxResult, containment, run
from gitswarm.sandbox.backends import ORDER_ENV

FAST = Limits(wall_seconds=5.0, cpu_seconds=5)


@pytest.fixture(autouse=True, params=["bwrap", "namespaces"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test under one backend alone (the process's choice is restored afterwards)."""
    before = os.environ.get(ORDER_ENV)
    os.environ[ORDER_ENV] = request.param
    containment.cache_clear()
    try:
        found = containment()
        if found.backend is None:
            pytest.skip(f"no {request.param} sandbox here: {found.refused.get(request.param)}")
        yield request.param
    finally:
        if before is None:
            os.environ.pop(ORDER_ENV, None)
        else:
            os.environ[ORDER_ENV] = before
        containment.cache_clear()


def python(code: str, *extra: str, **kwargs) -> SandboxResult:
    return run(["python", "-c", code, *extra], **{"limits": FAST, **kwargs})


def marker() -> str:
    """A unique argv word to find the sandbox's processes in /proc afterwards."""
    return f"gitswarm-sbx-{uuid.uuid4().hex}"


def processes_with(word: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if word.encode() in argv:
                found.append(int(entry.name))
    return found


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder others may read, outside /tmp: shown to a program only when exposed."""
    path = Path(tempfile.mkdtemp(prefix=".sandbox-test-", dir=Path(__file__).parent))
    path.chmod(0o755)
    (path / "public.txt").write_text("public")
    (path / "public.txt").chmod(0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_runs_with_files_stdin_and_env() -> None:
    code = "import sys; print(open('data/in.txt').read() + sys.stdin.read(), end='')"
    result = python(code, files={"data/in.txt": b"hello "}, stdin=b"world")
    assert result.ok and result.stdout == "hello world"
    assert not result.timed_out and not result.killed_for_memory
    assert result.duration_seconds < FAST.wall_seconds


def test_nonzero_exit_and_stderr() -> None:
    result = python("import sys; sys.stderr.write('boom'); sys.exit(3)")
    assert result.exit_code == 3 and not result.ok and result.stderr == "boom"


def test_workdir_is_kept_and_handed_back(tmp_path: Path) -> None:
    result = python("open('out.txt', 'w').write('42')", workdir=tmp_path / "w")
    assert result.ok
    out = tmp_path / "w" / "out.txt"
    assert out.read_text() == "42" and out.stat().st_uid == os.getuid()


def test_file_names_must_stay_inside() -> None:
    for bad in ("../x", "/etc/x"):
        with pytest.raises(ValueError):
            python("pass", files={bad: b""})


def test_timeout_kills_and_reports() -> None:
    result = python("import time; time.sleep(30)", limits=Limits(wall_seconds=1.0))
    assert result.timed_out and not result.ok
    assert result.duration_seconds < 3.0


def test_cpu_limit_reports_timeout() -> None:
    result = python("while True: pass", limits=Limits(wall_seconds=5.0, cpu_seconds=1))
    assert result.timed_out and result.duration_seconds < 4.0


def test_memory_hog_reported() -> None:
    result = python("x = bytearray(2 * 1024**3)", limits=Limits(memory_bytes=256 << 20))
    assert result.killed_for_memory and result.exit_code != 0 and not result.timed_out


def test_fork_bomb_contained_without_strays() -> None:
    word = marker()
    limits = Limits(wall_seconds=3.0, max_processes=32)
    result = python("import os\nwhile True: os.fork()", word, limits=limits)
    assert not result.ok
    assert result.duration_seconds < 5.0
    assert processes_with(word) == []


def test_background_child_is_killed_after_exit() -> None:
    word = marker()
    code = ("import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]])\n"
            "print('parent done')")
    result = python(code, word)
    assert result.ok and result.stdout == "parent done\n"
    assert result.duration_seconds < 3.0
    assert processes_with(word) == []


def test_child_that_leaves_the_session_is_killed() -> None:
    word = marker()
    code = ("import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]],\n"
            "                 start_new_session=True, stdout=subprocess.DEVNULL)")
    result = python(code, word)
    if result.uid is None:
        pytest.skip("only a dedicated sandbox uid reaches processes outside the session")
    assert result.ok and processes_with(word) == []


def test_no_network_to_localhost() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = ("import socket, sys\n"
                "try:\n"
                f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                "except OSError as exc:\n"
                "    sys.exit(f'refused: {exc}')\n"
                "print('connected')")
        result = python(code)
    assert result.isolation in {"netns", "env-only"}
    if result.isolation != "netns":
        pytest.skip("no network namespace on this machine; only the environment is cleaned")
    assert result.exit_code == 1 and "refused" in result.stderr


def test_no_network_to_public_address() -> None:
    code = ("import socket\n"
            "try:\n"
            "    socket.create_connection(('1.1.1.1', 443), timeout=2)\n"
            "except OSError:\n"
            "    print('blocked')")
    result = python(code)
    if result.isolation != "netns":
        pytest.skip("no network namespace on this machine")
    assert result.stdout == "blocked\n"


def test_a_folder_not_given_does_not_exist(open_dir: Path) -> None:
    code = f"print(open({str(open_dir / 'public.txt')!r}).read())"
    hidden = python(code)
    assert hidden.exit_code != 0 and "FileNotFoundError" in hidden.stderr
    shown = python(code, expose=(open_dir,))
    assert shown.ok and shown.stdout == "public\n"


def test_root_only_file_is_unreadable(open_dir: Path) -> None:
    secret = open_dir / "secret.txt"
    secret.write_text("top secret")
    secret.chmod(0o600)
    result = python(f"print(open({str(secret)!r}).read())", expose=(open_dir,))
    if result.uid is None:
        pytest.skip("the sandbox runs as the caller here; file modes cannot separate them")
    assert result.exit_code != 0 and "PermissionError" in result.stderr
    assert "top secret" not in result.stdout


def test_hidden_run_repository_is_invisible(open_dir: Path) -> None:
    repo = open_dir / "run"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git").chmod(0o755)
    repo.chmod(0o755)
    code = f"print(open({str(repo / '.git' / 'HEAD')!r}).read())"
    result = python(code, hide=(repo,), expose=(open_dir,))
    assert result.exit_code != 0 and "refs/heads/main" not in result.stdout
    assert python(code, expose=(open_dir,)).stdout.startswith("ref:")  # readable when not hidden


def test_output_is_truncated_to_a_bound() -> None:
    code = "import sys; sys.stdout.write('a' * 1000 + 'x' * 300000 + 'z' * 1000)"
    result = python(code, limits=Limits(wall_seconds=5.0, output_bytes=4096))
    assert result.stdout_truncated and not result.stderr_truncated
    assert len(result.stdout) < 4096 + 100
    assert result.stdout.startswith("a" * 1000) and result.stdout.endswith("z" * 1000)


def test_environment_has_no_inherited_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    result = python("import json, os; print(json.dumps(dict(os.environ)))",
                    env={"EXTRA": "given"})
    assert "sk-should-not-leak" not in result.stdout and "proxy.invalid" not in result.stdout
    assert '"EXTRA": "given"' in result.stdout and '"HOME"' in result.stdout


def test_missing_program_is_a_program_failure() -> None:
    result = run(["no-such-program-here"], limits=FAST)
    assert result.exit_code == 127 and "no-such-program-here" in result.stderr


def test_scratch_folder_is_removed() -> None:
    result = python("import os; print(os.getcwd())")
    assert result.ok and not Path(result.stdout.strip()).exists()


def test_removing_a_scratch_folder_never_changes_the_folder_that_holds_it(tmp_path: Path) -> None:
    """A scratch folder rmtree cannot remove as it is (here a link, which rmtree refuses; in a run,
    a folder still mounted or locked) is given write permission back inside itself only: the
    folder holding it (the system's /tmp, shared by every user) keeps its mode."""
    from gitswarm.sandbox.scratch import remove_tree

    holder = tmp_path / "tmp"
    holder.mkdir()
    holder.chmod(0o1777)
    (tmp_path / "elsewhere").mkdir()
    (holder / "gitswarm-sandbox-x").symlink_to(tmp_path / "elsewhere")
    remove_tree(holder / "gitswarm-sandbox-x")
    assert holder.stat().st_mode & 0o7777 == 0o1777


def test_interpreter_reaches_declared_packages_only() -> None:
    declared = run([sys.executable, "-c", "import pytest; print('ok')"], limits=FAST, packages=("pytest",))
    assert declared.ok and declared.stdout == "ok\n"
    for module in ("pytest", "gitswarm", "pygit2"):
        result = run([sys.executable, "-c", f"import {module}"], limits=FAST)
        assert result.exit_code == 1 and "ModuleNotFoundError" in result.stderr, module
    stdlib = run([sys.executable, "-c", "import json, sqlite3, fractions; print(fractions.Fraction(1, 3) * 3)"],
                 limits=FAST)
    assert stdlib.ok and stdlib.stdout == "1\n"


def test_concurrent_runs_are_separate() -> None:
    """A fork bomb in one run neither starves nor kills a run beside it. The bomb keeps forking
    until its wall time, and the calm runs start once its processes are seen, so the three
    really overlap: a bomb that died of its first refused fork could end before the calm runs
    began, and (slots being reused lowest first) all three had one uid."""
    word = marker()
    bomb = Limits(wall_seconds=4.0, max_processes=16)
    calm = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass']); print('ok')"
    with ThreadPoolExecutor(max_workers=3) as pool:
        # A bomb that keeps trying: a plain `os.fork()` loop dies of its first refused fork,
        # and could end before the calm runs began.
        forever = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
        bombing = pool.submit(python, forever, word, limits=bomb)
        while not processes_with(word) and not bombing.done():
            time.sleep(0.01)
        calm_runs = [pool.submit(python, calm) for _ in range(2)]
        results = [f.result() for f in calm_runs]
        overlapped = not bombing.done()
        bombed = bombing.result()
    assert overlapped, "the bomb ended before the calm runs did: the runs did not overlap"
    assert all(r.ok and r.stdout == "ok\n" for r in results)
    assert not bombed.ok and processes_with(word) == []
    if bombed.uid is not None:
        assert len({bombed.uid, *(r.uid for r in results)}) == 3


def test_runs_one_after_another_get_fresh_uids() -> None:
    """A run's leftovers (zombies not reaped yet count against RLIMIT_NPROC of their uid)
    never weigh on the next run: consecutive runs do not reuse a uid."""
    uids = [python("pass").uid for _ in range(3)]
    if uids[0] is None:
        pytest.skip("the sandbox runs as the caller here")
    assert len(set(uids)) == 3


def test_temporary_folders_are_private_to_a_run() -> None:
    name = f"/tmp/{marker()}"
    write = python(f"open({name!r}, 'w').write('left behind'); print('written')")
    read = python(f"import os; print(os.path.exists({name!r}))")
    assert write.stdout == "written\n" and read.stdout == "False\n"
    assert not Path(name).exists()


def test_exposed_folders_under_tmp_stay_in_view() -> None:
    with tempfile.TemporaryDirectory() as shown, tempfile.TemporaryDirectory() as other, \
            tempfile.TemporaryDirectory() as hidden:
        for folder in (shown, other):
            Path(folder).chmod(0o755)
            (Path(folder) / "f.txt").write_text("here")
            (Path(folder) / "f.txt").chmod(0o644)
        code = "import sys; print(open(sys.argv[1] + '/f.txt').read()); open(sys.argv[2] + '/f.txt')"
        result = python(code, shown, other, expose=(Path(shown),), hide=(Path(hidden),))
    assert result.stdout == "here\n"  # exposed: bound back into the private /tmp
    assert result.exit_code != 0 and "FileNotFoundError" in result.stderr  # the rest of /tmp is not there
