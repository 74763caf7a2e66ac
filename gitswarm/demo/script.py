"""What the scripted model writes: `script.yaml`, read once."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml


@cache
def script() -> dict:
    """Per problem of problems/demo (and `default`): the texts and verdicts the demo plays."""
    return yaml.safe_load((Path(__file__).with_name("script.yaml")).read_text(encoding="utf-8"))
