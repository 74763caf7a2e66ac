"""`MemoryWriter`: the run's writes (contributions, merges, commits onto main, the books: the
ledger, conversations, transcripts) made by a process of their own, off the engine's core.

pygit2 holds the GIL while it works: in the engine's process every commit (its objects and its
ref's transaction, about half a millisecond to a few, several per model call) takes the core
that the event loop and the model client share, and at a few hundred episodes in flight that
core is what bounds the run. The writer is `python -m gitswarm.memory.writer RUN`: it opens the
run's `Memory` and makes one write at a time, each read from its stdin and answered on its
stdout, so the engine's process only pickles the request and waits on a pipe (the GIL
released). Every write stays what it is in `Memory`: idempotent by its op, a compare-and-swap
of its ref, retried; the engine's process reads what it wrote from the same repository
(libgit2 reads refs and loose objects from disk each time).

A frame is a 4-byte length and a pickle: first `(PROTOCOL, WriteLimits)`, answered `(True,
PROTOCOL)` once the memory is open, then a request `(method, args)` at a time, each answered
`(True, value)` or `(False, exception)`. Pickle is fine here: both ends are this gitswarm, on a
pipe no one else holds. The writer ends when its stdin closes (the run's end, or the engine
killed) once the write in hand is made; it ignores Ctrl-C, which the terminal sends to both
processes, so that the engine decides when it stops.
"""

from __future__ import annotations

import contextlib
import copyreg
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from gitswarm.errors import RunFault
from gitswarm.memory.paths import WriteLimits

WRITES = frozenset({"put_records", "put_files", "add_transcripts", "put_transcript",
                    "contribute", "adopt", "compose", "commit_to_main"})
"""The `Memory` methods a writer makes: every write the engine makes while a run goes; those of
its end (selection, packing) stay on the git thread."""
PROTOCOL = "gitswarm-writer/1"
"""Said by both ends first: a writer started from another gitswarm (one upgraded under a run)
is refused, not misread."""
_LENGTH = struct.Struct(">I")
CLOSE_S = 30.0
"""Seconds the run's end waits for the writer to finish the write in hand and exit."""


class WriterLost(RunFault):
    """The writer process ended or broke its pipe; the write it was asked for may or may not
    be made (each is idempotent: make it again)."""


class MemoryWriter:
    """The client of a writer process: `call` sends one write and waits for its reply, one
    caller at a time (a lock), from any thread."""

    def __init__(self, run: Path, limits: WriteLimits | None = None) -> None:
        # What the writer says on stderr goes to a file, which never fills up (closed by `close`).
        self._said = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, "-m", "gitswarm.memory.writer", str(run)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._said)
        self._lock = threading.Lock()
        self.lost: str | None = None
        """Why the writer is gone, once it is (no further call is sent)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:  # the memory's limits, as the engine's own; the answer says the writer is this gitswarm's
            _send(self._process.stdin, (PROTOCOL, limits or WriteLimits()))
            ready = _receive(self._process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self.lost = self._why(exc)
        else:
            if ready != (True, PROTOCOL):
                self.lost = f"the memory's writer speaks {ready!r}, not {PROTOCOL} (gitswarm changed under the run?)"

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The writer's exit status once it ended (`close`), else None."""
        return self._process.returncode

    def call(self, method: str, *args: object) -> Any:
        """`Memory.<method>(*args)` made by the writer; its value, or its exception raised here.
        `WriterLost` when the process is gone: the write may or may not have been made."""
        if method not in WRITES:
            raise ValueError(f"{method} is not a write the memory's writer makes")
        with self._lock:
            if self.lost is not None:
                raise WriterLost(self.lost)
            stdin, stdout = self._process.stdin, self._process.stdout
            assert stdin is not None and stdout is not None
            try:
                _send(stdin, (method, args))
                ok, value = _receive(stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self.lost = self._why(exc)
                raise WriterLost(self.lost) from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """End the writer once its write in hand is made: close its stdin, wait (`CLOSE_S`),
        kill it past that."""
        with self._lock:
            if self.lost is None:
                self.lost = "the memory's writer was closed"
            if self._process.stdin is not None:
                with contextlib.suppress(OSError):  # a broken pipe: the writer is gone already
                    self._process.stdin.close()
            try:
                self._process.wait(CLOSE_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._said.close()

    def _why(self, exc: BaseException) -> str:
        """What ended the writer: its exit status and the last line it wrote to stderr."""
        try:
            self._process.wait(1.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._said.seek(0)
        said = self._said.read().decode("utf-8", "replace").strip().splitlines()
        return (f"the memory's writer process ended (exit status {self._process.returncode}"
                f"{': ' + said[-1] if said else ''}; {type(exc).__name__} on its pipe)")


def serve(run: Path, requests: IO[bytes], replies: IO[bytes]) -> None:
    """The writer's loop: open the run's memory, then make each request until `requests` ends."""
    import pygit2

    from gitswarm.memory.repo import Memory

    for error in {v for v in vars(pygit2).values() if isinstance(v, type) and issubclass(v, pygit2.GitError)}:
        copyreg.pickle(error, _git_error_reduced)  # pickle cannot import pygit2's own `_pygit2`
    protocol, limits = _receive(requests)
    if protocol != PROTOCOL:
        raise SystemExit(f"the engine speaks {protocol!r}, this writer {PROTOCOL}")
    memory = Memory(run, limits)
    _send(replies, (True, PROTOCOL))
    while True:
        try:
            method, args = _receive(requests)
        except EOFError:
            return
        try:
            reply: tuple[bool, object] = (True, getattr(memory, method)(*args))
        except Exception as exc:  # the engine's process raises it as the call's own
            reply = (False, exc if _carried(exc) else RunFault(f"the memory's writer's {method} failed: {exc!r}"))
        _send(replies, reply)


def _git_error_reduced(exc: Exception) -> Any:
    return _git_error, (type(exc).__name__, exc.args)


def _git_error(name: str, args: tuple[object, ...]) -> Exception:
    """A libgit2 error the writer met, rebuilt as pygit2's own class here."""
    import pygit2

    error: type[Exception] = getattr(pygit2, name)
    return error(*args)


def _carried(exc: Exception) -> bool:
    """Whether pickle carries `exc` across whole (an exception whose constructor takes other
    arguments than its `args` is not rebuilt)."""
    try:
        pickle.loads(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return False
    return True


def _send(pipe: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_LENGTH.pack(len(data)) + data)
    pipe.flush()


def _receive(pipe: IO[bytes]) -> Any:
    head = _exactly(pipe, _LENGTH.size)
    return pickle.loads(_exactly(pipe, _LENGTH.unpack(head)[0]))


def _exactly(pipe: IO[bytes], size: int) -> bytes:
    data = pipe.read(size)
    if len(data) != size:
        raise EOFError("the pipe ended")
    return data


def main() -> None:
    """The writer process: `python -m gitswarm.memory.writer RUN`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the engine decides when its writer ends
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break a reply
    serve(Path(sys.argv[1]), sys.stdin.buffer, replies)


if __name__ == "__main__":
    from gitswarm.memory import writer  # this module by its name, so that pickle names its functions so

    writer.main()
