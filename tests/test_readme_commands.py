"""Every offline command in the README runs as written: the code blocks, in order, in a shell in
a fresh folder holding the shipped problems/ and the example specs, with no API key. Left out,
and why: the block of a real run (it needs the provider's key: the block that sets one), the
installs before `&&` (the test runs in the installed gitswarm) and `pytest` (the suite itself)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def offline_commands(readme: str) -> list[str]:
    """The README's shell commands that need no network and no key, as written."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", readme, flags=re.S):
        if "_API_KEY" in block:
            continue
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            command = command.split("&&", 1)[1].strip() if command.startswith("pip install") else command
            if command and not command.startswith(("pip install", "pytest")):
                commands.append(command)
    return commands


def test_the_offline_commands_are_found():
    commands = offline_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands[0] == "gitswarm demo"
    assert "gitswarm status runs/demo" in commands
    assert any(c.startswith("gitswarm experiment experiments/scripted.toml") for c in commands)
    assert not any("anthropic" in c or "pytest" in c or "pip" in c for c in commands)


@pytest.mark.e2e  # the demo, the reading commands and the offline experiment: about a minute on 2 cores
def test_every_offline_readme_command_runs_as_written(tmp_path: Path):
    commands = offline_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    (tmp_path / "problems").symlink_to(ROOT / "problems")
    (tmp_path / "experiments").mkdir()
    for spec in (ROOT / "experiments").glob("*.toml"):
        shutil.copy(spec, tmp_path / "experiments")
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "GITSWARM_CONFIG"}
    environ |= {"PATH": path, "HOME": str(tmp_path)}  # no user config file either
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=environ, text=True, capture_output=True,
                              timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, command
