"""How a program is confined: one small interface, a backend per way of building its root.

A `Backend` turns the root a program is given (`view.View`) and its argv into instructions
for `launch.py`, which applies the resource limits and the sandbox uid in either case:

- `bwrap` (bubblewrap, where it is on PATH): the launcher drops to the sandbox uid, then
  execs `bwrap`, which makes new user, pid, network, IPC, UTS and mount namespaces and the
  root from `--ro-bind` lists. Bind mounts are `nosuid`.
- `namespaces` (no bwrap): the launcher itself makes the mount, pid, network, IPC and UTS
  namespaces (in a user namespace when not root), a tmpfs root holding the same mounts, and
  `pivot_root`s into it; then drops to the sandbox uid.

A container engine (podman, docker) is the third way, chosen by the problem, not by `order`:
a problem that names an image runs every program in a container of it (`container.py`, the
engine found by `engines.py`), whatever backend confines the host's programs. `choose` probes
the backends once per process,
in the order of `GITSWARM_SANDBOX` (default `bwrap,namespaces`, as root `namespaces,bwrap`:
`default_order`); where none works, programs
run only if the process was told they may run unconfined (`permit_unconfined`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Protocol

from gitswarm.sandbox.view import View

ORDER_ENV = "GITSWARM_SANDBOX"
DEFAULT_ORDER = ("bwrap", "namespaces")
UNCONFINED = "unconfined"
HOW_TO_FIX = ("install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap), or allow "
              "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
              "user.max_user_namespaces > 0; in a container, run it with --privileged or a seccomp "
              "profile that allows unshare), or run as root")


class Backend(Protocol):
    """One way of confining a program in the root made for it (its fields read-only, as a
    frozen dataclass's are)."""

    @property
    def name(self) -> str: ...

    @property
    def gives(self) -> str:
        """What containment it gives, in a sentence (doctor, README)."""

    def missing(self) -> str | None:
        """Why this backend cannot work here without trying it (a tool not installed), or None."""

    def instructions(self, root: View, argv: list[str]) -> dict:
        """What `launch.py` does after the limits: `mode` exec (an `argv` that confines, `data`
        for its `@data:N` words, the `sources` it must reach as the sandbox uid) or namespaces
        (`mounts` to build)."""


@dataclass(frozen=True)
class Bwrap:
    """bubblewrap builds the root; the launcher has already dropped to the sandbox uid."""

    name: str = "bwrap"
    gives: str = ("bubblewrap: new user, pid, network, IPC and mount namespaces; a root of read-only "
                  "binds of the system, the toolchains and the declared packages, the scratch folder "
                  "read-write, fresh /tmp, /dev and /proc; nosuid everywhere")

    def missing(self) -> str | None:
        return None if shutil.which("bwrap") else "bwrap is not on PATH"

    def instructions(self, root: View, argv: list[str]) -> dict:
        args = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--hostname", "sandbox"]
        data: list[str] = []
        for m in root.mounts:
            if m.kind in ("ro", "rw"):
                args += ["--ro-bind" if m.kind == "ro" else "--bind", m.source, m.target]
            elif m.kind == "tmpfs":
                args += ["--perms", m.mode, "--size", str(m.size), "--tmpfs", m.target]
            elif m.kind == "mask":
                args += (["--perms", "0000", "--size", "4096", "--tmpfs", m.target, "--remount-ro", m.target]
                         if os.path.isdir(m.target) else ["--ro-bind", "/dev/null", m.target])
            elif m.kind == "symlink":
                args += ["--symlink", m.source, m.target]
            elif m.kind == "file":
                args += ["--perms", "0644", "--ro-bind-data", f"@data:{len(data)}", m.target]
                data.append(m.data)
            elif m.kind in ("dev", "proc"):
                args += [f"--{m.kind}", m.target]
        sources = sorted({m.source for m in root.mounts if m.kind in ("ro", "rw")})
        return {"mode": "exec", "argv": [*args, "--chdir", root.cwd, "--", *argv], "data": data,
                "sources": sources}


@dataclass(frozen=True)
class Namespaces:
    """The launcher builds the root itself with the kernel's namespaces and `pivot_root`."""

    name: str = "namespaces"
    gives: str = ("the kernel's namespaces, made by gitswarm's launcher: new mount, pid, network, IPC "
                  "and UTS namespaces (and a user namespace when not root); a tmpfs root holding the "
                  "same read-only binds, the scratch folder read-write, fresh /tmp, /dev and /proc")

    def missing(self) -> str | None:
        return None if os.path.isdir("/proc/self/ns") else "this kernel has no namespaces"

    def instructions(self, root: View, argv: list[str]) -> dict:
        mounts = [vars(m) for m in root.mounts]
        return {"mode": "namespaces", "mounts": mounts, "cwd": root.cwd, "argv": argv,
                "userns": os.geteuid() != 0}


BACKENDS: dict[str, Backend] = {"bwrap": Bwrap(), "namespaces": Namespaces()}


def default_order() -> tuple[str, ...]:
    """bwrap first, except as root: there the launcher's own namespaces keep a reproduce
    reference's secure execution (it is setgid, so the loader ignores LD_PRELOAD and the
    program cannot read the reference's image through a preloaded library), which bwrap's
    binds, always nosuid, lose (`tests/test_shell.py`)."""
    return ("namespaces", "bwrap") if os.geteuid() == 0 else DEFAULT_ORDER


def order() -> list[Backend]:
    """The backends to try, in order: `GITSWARM_SANDBOX` (names, comma-separated; empty: none)."""
    given = os.environ.get(ORDER_ENV)
    names = default_order() if given is None else [n.strip() for n in given.split(",") if n.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        from gitswarm.errors import BadInput

        raise BadInput(f"{ORDER_ENV}={given!r}: no sandbox backend {unknown[0]!r}",
                       fix=f"name some of {', '.join(BACKENDS)}, comma-separated")
    return [BACKENDS[n] for n in names]
