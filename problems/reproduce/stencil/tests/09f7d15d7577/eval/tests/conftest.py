import subprocess
from pathlib import Path

import pytest

EXECUTABLE = str(Path("executable").resolve())


class Done:
    def __init__(self, completed):
        self.returncode = completed.returncode
        self.stdout = completed.stdout.decode("utf-8", "replace")
        self.stderr = completed.stderr.decode("utf-8", "replace")


@pytest.fixture
def stencil(tmp_path):
    """Run ./executable in a scratch folder holding `files` (name -> text or bytes)."""
    def run(*args, stdin="", files=None):
        for name, data in (files or {}).items():
            (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
        data = stdin if isinstance(stdin, bytes) else stdin.encode()
        return Done(subprocess.run([EXECUTABLE, *args], input=data, capture_output=True,
                                   cwd=tmp_path, timeout=20))
    return run
