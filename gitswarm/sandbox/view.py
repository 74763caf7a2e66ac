"""What a sandboxed program sees: a root made for it, listed as mounts, the same for every backend.

Deny by default: an empty root, then the system's runtime read-only (`/usr` and the `/bin`,
`/sbin`, `/lib*` beside it, a few files of `/etc`), the interpreter and its standard library,
the Python packages the caller declares (`packages`; never gitswarm's own, never the rest of
the environment gitswarm runs in), the toolchains and tool folders the caller gives
(`expose`), the scratch folder read-write, fresh `/tmp`, `/var/tmp` and `/dev/shm`, a minimal
`/dev` and the `/proc` of the program's own pid namespace. Nothing else exists for it: no
`/home`, `/root`, `/work`, `/opt`, `/srv`, `/mnt`, no host `/tmp`, no other run's files.
Paths of `hide` (and gitswarm's own package and data) are covered where they fall inside
something shown: for a reproduce problem, its callers add every other copy of the reference
the system folders hold (`copies.py`), so only the reference the tools offer can run.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
       "ca-certificates.conf", "localtime", "nsswitch.conf", "hosts", "host.conf", "mime.types",
       "os-release", "debian_version", "bash.bashrc", "profile", "inputrc", "gai.conf")
"""Files of /etc that programs read (the loader's cache, certificates, the time zone)."""
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


@dataclass(frozen=True)
class Mount:
    """One step of building the root, applied in order (a later one covers an earlier).

    kind: `ro` / `rw` (bind `source` at `target`), `tmpfs` (a fresh empty folder of `size`
    bytes, `mode`), `mask` (cover `target` with nothing: an unreadable empty folder, or
    /dev/null for a file), `symlink` (`target` -> `source`), `file` (`target` holds `data`),
    `dev` (a minimal /dev), `proc` (the pid namespace's /proc)."""

    kind: str
    target: str
    source: str = ""
    data: str = ""
    size: int = 0
    mode: str = "1777"


@dataclass(frozen=True)
class View:
    """The root of one run: its mounts, and the working folder inside it."""

    mounts: tuple[Mount, ...]
    cwd: str


def view(scratch: Path, uid: int | None, *, expose: tuple[Path, ...] = (), hide: tuple[Path, ...] = (),
         packages: tuple[str, ...] = (), private_bytes: int = 64 << 20) -> View:
    """The root a program run in `scratch` (read-write) is given."""
    mounts: list[Mount] = [*system(), *etc(uid), Mount("dev", "/dev"), Mount("proc", "/proc")]
    mounts += [Mount("tmpfs", p, size=private_bytes) for p in PRIVATE]
    shown = [*interpreter(), *(str(Path(p).resolve()) for p in expose if Path(p).exists())]
    mounts += [Mount("ro", p, os.path.realpath(p)) for p in dict.fromkeys(shown)]
    for folder in site_folders():
        mounts.append(Mount("tmpfs", folder, size=1 << 20, mode="0755"))
        mounts += [Mount("ro", str(p), str(p)) for p in package_entries(packages) if p.parent == Path(folder)]
    real = str(scratch.resolve())
    mounts.append(Mount("rw", real, real))
    covered = [str(Path(p).resolve()) for p in (*hide, *own_files())]
    mounts += [Mount("mask", p) for p in dict.fromkeys(covered)
               if _inside(p, [*SYSTEM, *shown, real]) and os.path.lexists(p)]
    return View(tuple(mounts), real)


def system() -> list[Mount]:
    """The system's runtime, read-only; merged-/usr links stay links."""
    found = []
    for path in SYSTEM:
        if os.path.islink(path):
            found.append(Mount("symlink", path, os.readlink(path)))
        elif os.path.isdir(path):
            found.append(Mount("ro", path, os.path.realpath(path)))
    return found


def etc(uid: int | None) -> list[Mount]:
    """The files of /etc programs need, and account files naming only root, the program's uid
    and nobody (the host's accounts are not the program's business)."""
    me = os.getuid() if uid is None else uid
    users = {0: "root", me: "sandbox", 65534: "nobody"}
    passwd = "".join(f"{name}:x:{n}:{n}:{name}:/tmp:/bin/sh\n" for n, name in users.items())
    group = "".join(f"{name}:x:{n}:\n" for n, name in users.items())
    found = [Mount("file", "/etc/passwd", data=passwd), Mount("file", "/etc/group", data=group)]
    return found + [Mount("ro", f"/etc/{n}", os.path.realpath(f"/etc/{n}")) for n in ETC if os.path.exists(f"/etc/{n}")]


@functools.cache
def interpreter() -> tuple[str, ...]:
    """The folders that make this Python run: its installation (standard library) and, in a
    virtual environment, the environment's `bin` and `pyvenv.cfg` (its packages are masked)."""
    found = [str(Path(sys.base_prefix).resolve()), str(Path(sys.executable).resolve().parent)]
    if sys.prefix != sys.base_prefix:
        prefix = Path(sys.prefix)
        found += [str(prefix / "bin"), str(prefix / "pyvenv.cfg")]
    return tuple(p for p in dict.fromkeys(found) if not _inside(p, SYSTEM))


@functools.cache
def site_folders() -> tuple[str, ...]:
    """Every folder of installed packages this interpreter reads: masked, then refilled with
    the declared packages only."""
    folders = {*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])}
    base = {"base": sys.base_prefix, "platbase": sys.base_prefix}
    folders |= {sysconfig.get_path(k, vars=base) for k in ("purelib", "platlib")}
    folders |= {p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))}
    return tuple(sorted(str(Path(f).resolve()) for f in folders if Path(f).is_dir()))


@functools.cache
def package_entries(names: tuple[str, ...]) -> tuple[Path, ...]:
    """The top-level files and folders of the distributions `names` and of what they require."""
    entries: set[Path] = set()
    todo, seen = list(names), set()
    while todo:
        name = _normal(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        base = Path(str(dist.locate_file(""))).resolve()
        for file in dist.files or []:
            if file.parts and file.parts[0] != "..":
                entries.add(base / file.parts[0])
        todo += [_requirement(r) for r in dist.requires or [] if "extra ==" not in r]
    return tuple(sorted(p for p in entries if p.exists() and p.name != "__pycache__"))


def own_files() -> tuple[Path, ...]:
    """gitswarm's own package and the problem sets it ships (reference sources, hidden tests),
    covered wherever they would otherwise show (an install under /usr)."""
    package = Path(__file__).resolve().parent.parent
    return (package, *(p for p in package.parent.glob("gitswarm*.dist-info")))


def _requirement(text: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", text.strip(), maxsplit=1)[0]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _inside(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)
