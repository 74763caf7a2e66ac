"""Set up a sandboxed child, then exec the untrusted program (run by `gitswarm.sandbox`).

Runs as its own short-lived process (`python -I -S launch.py CONFIG_JSON`) so that
namespace, mount, limit and uid changes happen in a fresh single-threaded interpreter,
never in a `preexec_fn` of the (threaded) engine. It imports only the standard library
(and `newroot.py` beside it). The config's `mode` says who confines the program:

- `exec`: a confining tool (bwrap) given as `argv`: set the limits, drop to the sandbox
  uid, exec the tool; the tool runs `/bin/sh`, which writes `ready` to the status pipe once
  the root is made, then execs the program;
- `namespaces`: this launcher makes the namespaces (a user namespace when not root), forks
  the pid namespace's first process, which builds the root (`newroot.build`) and forks the
  program (limits, uid, exec) and reports its wait status, which the launcher then ends with;
- `none` (unconfined, only when the user said so): limits and uid only.
"""

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys

TYPE_CHECKING = False  # not typing's (its import costs each launch ~10 ms); a type checker reads it as True
if TYPE_CHECKING:
    from gitswarm.sandbox import newroot
else:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import newroot

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG = 1
READY = "ready"

_libc = ctypes.CDLL(None, use_errno=True)


def _enter_userns() -> None:
    """Become a user namespace's owner, mapped to our own ids (so exec drops capabilities)."""
    uid, gid = os.getuid(), os.getgid()
    newroot.check(_libc.unshare(CLONE_NEWUSER), "unshare(user)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _set_limits(limits: dict[str, int]) -> None:
    """Each limit, never above what this process may have (a caller run under a lower hard
    limit, `prlimit` or a batch scheduler's, keeps it: raising it is refused)."""
    for name, value in limits.items():
        which = getattr(resource, name)
        hard = resource.getrlimit(which)[1]
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        cap = soft + (name == "RLIMIT_CPU")  # a second of SIGXCPU warning before the kill
        resource.setrlimit(which, (soft, cap if hard == resource.RLIM_INFINITY else min(cap, hard)))


def _become(uid: int | None) -> None:
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def kill_all_as(uid: int) -> None:
    """Become `uid` and SIGKILL all its processes in one `kill(-1)`, which forks cannot race."""
    _become(uid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


def _fail(cfg: dict, exc: OSError) -> None:
    os.write(cfg["status_fd"], f"sandbox set-up failed: {exc}".encode())
    os._exit(125)


def _exec(argv: list[str]) -> None:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"sandbox: cannot execute {argv[0]!r}: {exc.strerror}", file=sys.stderr)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _exec_tool(cfg: dict) -> None:
    """Limits and uid here; the tool in `argv` builds the root; sh says `ready`, then execs."""
    fd = 3  # one digit: the shell's redirections take no other
    try:
        if cfg["status_fd"] != fd:
            os.dup2(cfg["status_fd"], fd)
            os.close(cfg["status_fd"])
            cfg["status_fd"] = fd
        words = {f"@data:{i}": str(_data_fd(text)) for i, text in enumerate(cfg["data"])}
        if cfg["uid"] is not None:
            _reachable(cfg["sources"])
        _set_limits(cfg["limits"])
        _become(cfg["uid"])
    except OSError as exc:
        _fail(cfg, exc)
    argv = [words.get(w, w) for w in cfg["argv"]]
    cut = argv.index("--") + 1
    ready = ["/bin/sh", "-c", f'printf {READY} >&{fd} && exec {fd}>&- && exec "$@"', "sh"]
    os.set_inheritable(fd, True)
    _exec([*argv[:cut], *ready, *argv[cut:]])


def _reachable(paths: list[str]) -> None:
    """In a private mount namespace, make each of `paths` reachable by other users: a folder
    on the way that they cannot enter (/root, holding an interpreter) is covered by an open
    empty tmpfs, into which the paths below it are bound back."""
    newroot.check(_libc.unshare(CLONE_NEWNS), "unshare(mount)")
    newroot.mount("none", "/", None, newroot.MS_REC | newroot.MS_PRIVATE)
    while blocked := sorted({b for p in paths if (b := _blocked_ancestor(p))}, key=len):
        inside = [p for p in paths if p.startswith(blocked[0] + "/")]
        outermost = [p for p in inside if not any(p.startswith(q + "/") for q in inside)]
        fds = {p: os.open(p, os.O_PATH) for p in outermost}
        newroot.mount("tmpfs", blocked[0], "tmpfs", newroot.MS_NOSUID | newroot.MS_NODEV, "mode=0755,size=1m")
        for path, fd in fds.items():
            newroot.place(path, os.path.isdir(f"/proc/self/fd/{fd}"))
            newroot.mount(f"/proc/self/fd/{fd}", path, None, newroot.MS_BIND | newroot.MS_REC)
            os.close(fd)


def _blocked_ancestor(path: str) -> str | None:
    """The topmost ancestor of `path` that other users cannot traverse, if any."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:i])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def _data_fd(text: str) -> int:
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    os.set_inheritable(read, True)
    return read


def _namespaces(cfg: dict) -> None:
    """Make the namespaces; the pid namespace's first process builds the root and runs the
    program; end as the program ended (its signal too)."""
    try:
        if cfg["userns"]:
            _enter_userns()
        flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
        newroot.check(_libc.unshare(flags), "unshare")
    except OSError as exc:
        _fail(cfg, exc)
    read, write = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(read)
        _first_process(cfg, write)
    os.close(write)
    os.close(cfg["status_fd"])
    os.waitpid(first, 0)
    with os.fdopen(read, "rb") as pipe:
        status = int(pipe.read() or b"-1")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if status >= 0 and os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if status >= 0 else 125)


def _first_process(cfg: dict, report: int) -> None:
    """pid 1 of the namespace: build the root, fork the program, reap, report its status."""
    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        newroot.build(cfg["mounts"])
        with contextlib.suppress(OSError):
            _libc.sethostname(b"sandbox", 7)
        program = os.fork()
        if program == 0:
            _set_limits(cfg["limits"])
            _become(cfg["uid"])
            os.chdir(cfg["cwd"])
            _exec(cfg["argv"])
    except OSError as exc:
        _fail(cfg, exc)
    os.close(cfg["status_fd"])
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program:
            os.write(report, str(status).encode())
            os._exit(0)


def main(cfg: dict) -> None:
    """Apply `cfg` to this process, then exec `cfg["argv"]` (exit 126/127 if that fails)."""
    if cfg.get("kill_all_as") is not None:
        kill_all_as(cfg["kill_all_as"])
        return
    os.set_inheritable(cfg["status_fd"], False)  # closes by itself when exec succeeds
    if cfg["mode"] == "exec":
        _exec_tool(cfg)
    elif cfg["mode"] == "namespaces":
        _namespaces(cfg)
    try:
        _set_limits(cfg["limits"])
        _become(cfg["uid"])
        os.chdir(cfg["cwd"])
    except OSError as exc:
        _fail(cfg, exc)
    _exec(cfg["argv"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
