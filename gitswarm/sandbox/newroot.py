"""Build a program's root from a list of mounts with the kernel's namespaces (the `namespaces`
backend; run inside `launch.py`, standard library only).

As bubblewrap does: in a fresh mount namespace, a tmpfs on /tmp becomes the root and the old
root goes to /oldroot; the new root is a second tmpfs, filled from the mounts (sources read
through /oldroot), with /proc mounted while the old one is still in view (the kernel asks for
that in a user namespace); then the old root is detached and the new one made the root.
"""

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
_KEPT = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
         (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

_libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    fs = fstype.encode() if fstype else None
    check(_libc.mount(source.encode(), target.encode(), fs, flags, data.encode()), f"mount {target}")


_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}


def _pivot(new: str, old: str) -> None:
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown system call number on {os.uname().machine}")
    check(_libc.syscall(number, new.encode(), old.encode()), "pivot_root")


def build(mounts: list[dict]) -> None:
    """Make the mounts the root of this (single-threaded, privileged in its namespaces) process."""
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for name in ("newroot", "oldroot"):
        os.mkdir(f"/tmp/{name}")
    _pivot("/tmp", "/tmp/oldroot")
    os.chdir("/")
    mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for m in mounts:
        _apply(m, "/newroot" + m["target"])
    mount("none", "/newroot", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    check(_libc.umount2(b"/oldroot", MNT_DETACH), "umount /oldroot")
    os.chdir("/newroot")
    _pivot(".", ".")
    check(_libc.umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir("/")


def _apply(m: dict, target: str) -> None:
    kind, source = m["kind"], "/oldroot" + m["source"]
    if kind == "symlink":
        _parent(target)
        os.symlink(m["source"], target)
    elif kind == "file":
        _parent(target)
        with open(target, "w") as f:
            f.write(m["data"])
    elif kind in ("ro", "rw"):
        place(target, os.path.isdir(source))
        mount(source, target, None, MS_BIND | MS_REC)
        if kind == "ro":
            kept = os.statvfs(target).f_flag
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY
            mount("none", target, None, flags | sum(ms for st, ms in _KEPT if kept & st))
    elif kind == "tmpfs":
        place(target, True)
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={m['mode']},size={m['size']}")
    elif kind == "mask":
        if os.path.isdir(target):
            mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=000,size=4k")
        elif os.path.lexists(target):
            mount("/oldroot/dev/null", target, None, MS_BIND)
    elif kind == "dev":
        _dev(target)
    elif kind == "proc":
        place(target, True)
        mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _dev(target: str) -> None:
    """A minimal /dev: the harmless character devices, the fd links, a folder for /dev/shm."""
    place(target, True)
    mount("tmpfs", target, "tmpfs", MS_NOSUID, "mode=0755,size=64k")
    for name in DEVICES:
        if os.path.exists(f"/oldroot/dev/{name}"):
            place(f"{target}/{name}", False)
            mount(f"/oldroot/dev/{name}", f"{target}/{name}", None, MS_BIND)
    for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                       ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(link, f"{target}/{name}")
    os.mkdir(f"{target}/shm")


def _parent(target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)


def place(target: str, folder: bool) -> None:
    """A mount point at `target`: a folder, or an empty file."""
    if folder:
        os.makedirs(target, exist_ok=True)
    elif not os.path.exists(target):
        _parent(target)
        open(target, "w").close()
