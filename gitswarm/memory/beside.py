"""Files a process keeps beside the run in its git folder (git ignores the files it does not
know there): derived data such as the kept index and the read model's folders, never the truth."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_whole(target: Path, data: bytes) -> bool:
    """Write `data` to `target` whole or not at all (a temporary file beside it, renamed over
    it). False when the folder cannot be written (read-only, full, or the name is taken by a
    folder): the file keeps what it held, and its next reader builds on that."""
    try:
        fd, part = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(part, target)
    except OSError:
        Path(part).unlink(missing_ok=True)
        return False
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise
    return True
