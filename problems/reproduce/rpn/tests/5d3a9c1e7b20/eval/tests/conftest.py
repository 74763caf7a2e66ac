import subprocess

import pytest


def _run(*args, stdin=None):
    return subprocess.run(["./executable", *args], input=stdin, capture_output=True, text=True, timeout=20)


@pytest.fixture
def rpn():
    return _run
