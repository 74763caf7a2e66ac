"""Set up a sandboxed child, then exec the untrusted program (run by `gitswarm.sandbox`).

Runs as its own short-lived process (`python -I -S launch.py CONFIG_JSON`) so that
namespace, mount, limit and uid changes happen in a fresh single-threaded interpreter,
never in a `preexec_fn` of the (threaded) engine. It imports only the standard library.
Steps, each only when the config asks for it: enter a user namespace (unprivileged
callers), unshare the mount and network namespaces, give the run private /tmp-like
folders, re-expose the interpreter and scratch folder when an ancestor is closed to other
users, cover hidden paths, set resource limits, drop to the sandbox uid, and exec.
"""

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV = 1, 2, 4
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    fs = fstype.encode() if fstype else None
    _check(_libc.mount(source.encode(), target.encode(), fs, flags, data.encode()), target)


def _enter_userns() -> None:
    """Become a user namespace's owner, mapped to our own ids (so exec drops capabilities)."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER), "unshare(user)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _blocked_ancestor(path: str) -> str | None:
    """The topmost ancestor of `path` that other users cannot traverse, if any."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:i])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def _cover(target: str, mode: str, size: int, keep: list[str]) -> None:
    """Mount a fresh tmpfs on `target`, then bind the paths of `keep` under it back in place."""
    inside = [p for p in keep if p.startswith(target.rstrip("/") + "/")]
    outermost = [p for p in inside if not any(p.startswith(q + "/") for q in inside)]
    fds = {p: os.open(p, os.O_PATH) for p in outermost}
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")
    for path, fd in fds.items():
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)


def _arrange_mounts(cfg: dict) -> None:
    """Private temporary folders; the interpreter and scratch folder reachable; hidden paths gone."""
    keep = cfg["expose"]
    for folder in cfg["private"]:
        if os.path.isdir(folder):
            _cover(folder, "1777", cfg["private_bytes"], keep)
    if cfg["uid"] is not None:
        while blocked := sorted({b for p in keep if (b := _blocked_ancestor(p))}, key=len):
            _cover(blocked[0], "0755", 1 << 20, keep)
    _hide(cfg["hide"])


def _hide(paths: list[str]) -> None:
    """Cover each hidden path: a directory with an empty unreadable tmpfs, a file with /dev/null."""
    for path in paths:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=000,size=4k")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND)


def _set_limits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value + (name == "RLIMIT_CPU")))


def kill_all_as(uid: int) -> None:
    """Become `uid` and SIGKILL all its processes in one `kill(-1)`, which forks cannot race."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


def main(cfg: dict) -> None:
    """Apply `cfg` to this process, then exec `cfg["argv"]` (exit 126/127 if that fails)."""
    if cfg.get("kill_all_as") is not None:
        kill_all_as(cfg["kill_all_as"])
        return
    os.set_inheritable(cfg["status_fd"], False)  # closes by itself when exec succeeds
    try:
        _set_up(cfg)
    except OSError as exc:
        os.write(cfg["status_fd"], f"sandbox set-up failed: {exc}".encode())
        os._exit(125)
    argv = cfg["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"sandbox: cannot execute {argv[0]!r}: {exc.strerror}", file=sys.stderr)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _set_up(cfg: dict) -> None:
    if cfg["userns"]:
        _enter_userns()
    flags = (CLONE_NEWNS if cfg["mountns"] else 0) | (CLONE_NEWNET if cfg["netns"] else 0)
    if flags:
        _check(_libc.unshare(flags), "unshare")
    if cfg["mountns"]:
        _mount("none", "/", None, MS_REC | MS_PRIVATE)
        _arrange_mounts(cfg)
    _set_limits(cfg["limits"])
    if cfg["uid"] is not None:
        os.setgroups([])
        os.setgid(cfg["uid"])
        os.setuid(cfg["uid"])
    os.chdir(cfg["cwd"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
