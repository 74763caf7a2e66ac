"""Build a small ProgramBench-shaped task image on this machine, without any registry.

1. A Debian root (bash, python3 with pytest, gcc) from the machine's own apt sources by
   `mmdebstrap` (about a minute and 420 MB the first time), imported as `BASE`; kept, and
   reused while the engine has it (`image exists`).
2. On top of it (`podman build`, no network), the images of the calculator task of
   `tests/reproduce_fixture.py`, named as the official ones are from the instance id
   (`__` becomes `_1776_`) under `--registry`:
   - `<registry>/testorg_1776_calculator.abc1234:task_cleanroom`: what the worker gets, an
     unprivileged user `agent` and `/workspace` holding the reference (a small C program,
     built there) as `./executable`, its documentation (`README.md`, `docs/usage.md`), a
     one-commit git worktree; and `/opt/image-only.txt`, a file no host has;
   - `<registry>/testorg_1776_calculator.abc1234:task`: the grading image, the same
     without the reference.

Prints the two names. `--force` rebuilds the task images (the base is kept).

    CONTAINERS_CONF=... python scripts/build_task_image.py [--registry localhost/gitswarm-test] [--force]
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BASE = "localhost/gitswarm-test-base:bookworm"
PACKAGES = "python3,python3-pytest,gcc,libc6-dev,bash"
INSTANCE = "testorg__calculator.abc1234"
MARKER = "only-in-the-task-image"
CALC_C = Path(__file__).resolve().parents[1] / "tests" / "reproduce_fixture.py"
CONTAINERFILE = """\
FROM {base}
RUN useradd --create-home --uid 1000 agent && mkdir -p /workspace
COPY workspace/ /workspace/
{reference}RUN printf '%s\\n' {marker} > /opt/image-only.txt && chown -R agent:agent /workspace
USER agent
WORKDIR /workspace
"""
REFERENCE = "COPY calc.c /calc.c\nRUN gcc -O2 -o /workspace/executable /calc.c && rm /calc.c\n"
README = "# calculator\n\n`calculator A OP B` prints the integer result of A OP B, for OP in + - *.\n"
USAGE = "Usage: calculator A OP B\n\nExit status 2 on a bad operator or a wrong number of arguments.\n"


def engine() -> str:
    """The container engine's command: GITSWARM_CONTAINER_ENGINE, else podman, else docker."""
    for name in (os.environ.get("GITSWARM_CONTAINER_ENGINE") or "", "podman", "docker"):
        if name and shutil.which(name):
            return name
    sys.exit("no container engine: apt-get install podman runc")


def names(registry: str) -> tuple[str, str]:
    """The task's cleanroom and grading images, as the official harness names them."""
    repo = f"{registry.rstrip('/')}/{INSTANCE.replace('__', '_1776_')}"
    return f"{repo}:task_cleanroom", f"{repo}:task"


def exists(cli: str, image: str) -> bool:
    return subprocess.run([cli, "image", "exists", image], capture_output=True).returncode == 0


def ensure_base(cli: str) -> None:
    """The Debian root as BASE, made by mmdebstrap from the machine's apt sources unless present."""
    if exists(cli, BASE):
        return
    if not shutil.which("mmdebstrap"):
        sys.exit("mmdebstrap is not installed: apt-get install mmdebstrap")
    sources = sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) or ["/etc/apt/sources.list"]
    with tempfile.TemporaryDirectory(prefix="gitswarm-base-") as tmp:
        tar = Path(tmp) / "base.tar"
        with open(sources[0], "rb") as given:
            subprocess.run(["mmdebstrap", "--variant=apt", f"--include={PACKAGES}", "bookworm", str(tar), "-"],
                           stdin=given, check=True)
        subprocess.run([cli, "import", str(tar), BASE], check=True, stdout=subprocess.DEVNULL)


def calculator_source() -> str:
    """The C reference of tests/reproduce_fixture.py (its CALC_C), read without importing tests."""
    text = CALC_C.read_text()
    start = text.index('CALC_C = r"""') + len('CALC_C = r"""')
    return text[start:text.index('"""', start)]


def workspace(folder: Path) -> None:
    """The task's /workspace: its docs, in a one-commit git worktree."""
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(README)
    (folder / "docs").mkdir()
    (folder / "docs" / "usage.md").write_text(USAGE)
    git = ["git", "-C", str(folder), "-c", "user.name=task", "-c", "user.email=task@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "task"], check=True)


def build(cli: str, image: str, with_reference: bool) -> None:
    """One task image on BASE: the workspace, and the reference built in it when asked."""
    with tempfile.TemporaryDirectory(prefix="gitswarm-task-") as tmp:
        context = Path(tmp)
        workspace(context / "workspace")
        if with_reference:
            (context / "calc.c").write_text(calculator_source())
        (context / "Containerfile").write_text(CONTAINERFILE.format(
            base=BASE, reference=REFERENCE if with_reference else "", marker=MARKER))
        subprocess.run([cli, "build", "--network", "none", "-q", "-t", image, "-f",
                        str(context / "Containerfile"), str(context)], check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", default="localhost/gitswarm-test", help="the images' registry and folder")
    parser.add_argument("--force", action="store_true", help="rebuild the task images (the base is kept)")
    args = parser.parse_args(argv)
    cli = engine()
    cleanroom, task = names(args.registry)
    with open(os.path.join(tempfile.gettempdir(), "gitswarm-task-image.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time on this machine (tests in parallel)
        ensure_base(cli)
        for image, with_reference in ((cleanroom, True), (task, False)):
            if args.force or not exists(cli, image):
                build(cli, image, with_reference)
    print(cleanroom)
    print(task)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
