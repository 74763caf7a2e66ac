"""Events emitted from threads while the run's loop goes (a remote worker pushes its results in
a thread, and says so) reach the log and the listeners on the loop's own thread: the log is a
text stream, which two threads writing at once can corrupt (a worker's log once held a stray
fragment of its own memory and a NUL byte, and the benchmark reading it failed). After the loop,
a thread writes the log itself."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import anyio.to_thread

from gitswarm.core.events import EVENT_LOG
from gitswarm.core.remote_events import Pushed
from gitswarm.engine.events import EventLog

THREADS, EACH = 4, 2000


def test_events_from_threads_are_said_on_the_loop_and_every_line_is_whole(tmp_path: Path):
    heard: list[int] = []
    log = EventLog(tmp_path, [lambda event: heard.append(threading.get_ident())])

    def pushes(thread: int) -> None:
        for n in range(EACH):
            log.emit(Pushed(worker=f"t{thread}", episodes=[f"e{n:05d}"]))

    async def run() -> int:
        async with anyio.create_task_group() as group:
            for thread in range(THREADS):
                group.start_soon(anyio.to_thread.run_sync, pushes, thread)
            for n in range(EACH):
                log.emit(Pushed(worker="loop", episodes=[f"e{n:05d}"]))
                if n % 50 == 0:
                    await anyio.sleep(0)
        return threading.get_ident()

    loop_thread = anyio.run(run)
    after = threading.Thread(target=pushes, args=(THREADS,))  # the loop has ended: written by the thread
    after.start()
    after.join()
    log.close()
    assert set(heard[:(THREADS + 1) * EACH]) == {loop_thread}
    lines = (tmp_path / EVENT_LOG).read_bytes().decode().splitlines()
    said = [json.loads(line)["data"]["worker"] for line in lines]
    assert sorted(set(said)) == ["loop", *(f"t{t}" for t in range(THREADS + 1))]
    assert len(said) == (THREADS + 2) * EACH
