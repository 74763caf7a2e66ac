import subprocess
from pathlib import Path

import pytest

EXECUTABLE = str(Path("executable").resolve())


@pytest.fixture
def shout(tmp_path):
    """Run ./executable in a scratch folder holding `files` (name -> text)."""
    def run(*args, stdin="", files=None):
        for name, text in (files or {}).items():
            (tmp_path / name).write_text(text)
        done = subprocess.run([EXECUTABLE, *args], input=stdin.encode(), capture_output=True, cwd=tmp_path,
                              timeout=20)
        return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    return run
