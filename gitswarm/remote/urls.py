"""Remote addresses: which kind of transport a URL names, and the URL as it may be shown.

git's credentials stay git's (ssh keys, credential helpers), but a user may still write a
password into a URL (`https://alice:secret@host/run.git`); `mask` keeps it out of every
message and log line we write.
"""

from __future__ import annotations

import re

from gitswarm.errors import BadInput

SCHEMES = ("file", "git", "ssh", "http", "https")
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:\s]*):[^/@\s]*@")


def mask(text: str) -> str:
    """`text` with the password of every `scheme://user:password@` in it replaced by `***`."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)


def is_remote(run: str) -> bool:
    """A run argument that names a git remote rather than a folder here (a `scheme://` URL or
    ssh's `user@host:path`; a plain path is a folder, even one git could reach as file://)."""
    return "://" in run or scheme(run) == "ssh"


def scheme(url: str) -> str:
    """The transport a URL names: one of `SCHEMES`, `ssh` for `user@host:path`, `file` for a path.

    Raises BadInput for a scheme git has no transport for here (`ftp://`, a typo)."""
    found = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url)
    if found:
        name = found[1].lower()
        if name not in SCHEMES:
            raise BadInput(f"remote {mask(url)!r}: unknown transport {name!r}; use one of "
                             f"{', '.join(s + '://' for s in SCHEMES)} or user@host:path")
        return name
    head, colon, _ = url.partition(":")
    # git's own rule: `host:path` is ssh when no slash comes before the first colon.
    return "ssh" if colon and head and "/" not in head else "file"
