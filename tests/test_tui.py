"""The dashboard under textual's pilot: attached to a finished run, to a run another process
is writing, and live with the engine in the app (graceful stop by `q`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from demo_run import demo_run, run_demo

from gitswarm.core.events import event_of
from gitswarm.tui.app import Dashboard
from gitswarm.tui.messages import EventsArrived
from gitswarm.tui.screens import DetailScreen, GraphScreen, HelpScreen
from gitswarm.tui.state import DashState
from gitswarm.tui.tables import ProblemsTable, WorkersTable

pytestmark = pytest.mark.anyio
DEMO_PROBLEMS = {"demo-divisors-36", "demo-hexagon-angles", "demo-odd-sum", "demo-reverse-words", "demo-shout"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory)


@pytest.fixture(scope="module")
def voted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo under plain plurality (`--verify 0`): every problem is chosen by nominations."""
    run = tmp_path_factory.mktemp("voted") / "run"
    anyio.run(lambda: run_demo(run, workers=3, budget=60, verify=0))
    return run


async def settle(pilot, until, timeout: float = 10.0) -> None:
    """Let the app work until `until()` holds."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "the dashboard did not get there in time"
        await pilot.pause(0.1)


def text_of(widget) -> str:
    return str(widget.render())


async def test_attached_panels_are_populated(run: Path):
    app = Dashboard(run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.state.header.stopped and app.state.problems["demo-odd-sum"].kind != "?")
        header = text_of(app.query_one("RunHeader"))
        assert "demo" in header and "every problem is settled" in header and "episodes" in header
        problems = app.query_one(ProblemsTable)
        assert problems.row_count == len(DEMO_PROBLEMS)
        assert {str(k.value) for k in problems.rows} == DEMO_PROBLEMS
        assert all(r.state == "selected" for r in app.state.problems.values())
        assert all(r.contributions >= 1 for r in app.state.problems.values())
        assert app.query_one(WorkersTable).row_count == 4
        assert app.query_one("#feed").shown >= 10
        app.theme = "textual-light"  # the panels use theme variables only: readable on light too
        await pilot.pause(0.2)
        assert "every problem is settled" in text_of(app.query_one("RunHeader"))
        await pilot.press("q")
    assert app.return_code == 0


async def test_detail_graph_help_and_navigation(run: Path):
    app = Dashboard(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.query_one(ProblemsTable).row_count == len(DEMO_PROBLEMS))
        await pilot.press("down")
        problem = app.query_one(ProblemsTable).selected_key()
        assert problem in DEMO_PROBLEMS and problem != min(DEMO_PROBLEMS)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen) and app.screen.problem == problem
        await settle(pilot, lambda: app.screen.commits)
        markdown = app.screen.query_one("#item")
        await settle(pilot, lambda: "loading" not in markdown.source)
        assert "# solution(" in markdown.source  # newest first: the solution commit
        await pilot.press("down", "down")
        await settle(pilot, lambda: "# solution(" not in markdown.source)
        await pilot.press("g")
        assert isinstance(app.screen, GraphScreen)
        await settle(pilot, lambda: "Contribution graph" in text_of(app.screen.query_one("#graph")))
        graph = text_of(app.screen.query_one("#graph"))
        assert "attempt" in graph and ("cites" in graph or "inherits" in graph)
        await pilot.press("escape", "escape")
        assert not isinstance(app.screen, DetailScreen | GraphScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "p")  # pause is for solve only: a warning, nothing else
        assert not app.control.paused
        await pilot.press("q")


@pytest.mark.e2e  # a writer process; the pseudo-terminal test below keeps a subprocess in the default run
async def test_attach_follows_a_run_another_process_writes(tmp_path: Path):
    run = tmp_path / "live"
    # 0.2 s a call keeps the writer busy for seconds after the first commit, however fast the
    # engine: the test must attach to a run still being written, not read a finished one.
    writer = subprocess.Popen([sys.executable, "-m", "gitswarm", "demo", "--run", str(run), "--no-tui",
                               "--latency", "0.2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        app = Dashboard(run)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, lambda: app.state.feed_total >= 1, timeout=30)
            first = app.state.feed_total
            assert not app.state.header.stopped
            await settle(pilot, lambda: app.state.header.stopped, timeout=60)
            assert app.state.feed_total > first  # new commits appeared while attached
            await settle(pilot, lambda: all(r.state == "selected" for r in app.state.problems.values()), timeout=30)
            await pilot.press("q")
    finally:
        writer.wait(timeout=60)
    assert writer.returncode == 0, writer.stderr.read()


async def test_a_run_whose_process_died_is_not_shown_running(tmp_path: Path):
    """A solve killed (SIGKILL: no stop event) leaves a log that ends mid-run; attached, the
    dashboard sees no process holding the run and says so, instead of `[running]` forever."""
    from gitswarm.tui.header import header_text
    from gitswarm.tui.state import GONE

    run = tmp_path / "killed"
    writer = subprocess.Popen([sys.executable, "-m", "gitswarm", "demo", "--run", str(run), "--no-tui",
                               "--latency", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in writer.stdout:
            if " committed to " in line:
                break
    finally:
        writer.kill()
        writer.wait(timeout=60)
    assert b"run_stopped" not in (run / "gitswarm-events.jsonl").read_bytes()
    app = Dashboard(run)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.state.header.stopped == GONE)
        assert "[running]" not in header_text(app.state) and "process is gone" in header_text(app.state)
        await pilot.press("q")


async def test_live_engine_stops_gracefully_on_q(tmp_path: Path):
    from gitswarm.core.control import Control
    from gitswarm.fakeserver import FaultPlan

    control = Control()

    def engine(listener):
        return run_demo(tmp_path / "solve", FaultPlan(latency_s=0.02), [listener], control,
                        workers=2, verify=0, budget=40)

    app = Dashboard(tmp_path / "solve", engine=engine, control=control)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.state.feed_total >= 1, timeout=30)
        await pilot.press("p")
        assert control.paused
        await settle(pilot, lambda: "PAUSED" in text_of(app.query_one("RunHeader")))
        await pilot.press("p", "q")
        # A graceful stop: the app stays; the engine may already be done if no episode was in flight.
        assert control.stop.is_set() and not control.paused and app.is_running
        await settle(pilot, lambda: app.finished, timeout=30)
        assert app.result.reason.detail == "stopped by the user" and app.result.charged < 40
        await settle(pilot, lambda: app.state.header.stopped == "stopped by the user")
        await pilot.press("q")
    assert app.error is None and app.return_code == 0


def test_dashboard_command_refuses_a_folder_that_is_not_a_run(tmp_path: Path):
    from typer.testing import CliRunner

    from gitswarm.cli.main import app

    result = CliRunner().invoke(app, ["dashboard", str(tmp_path)])
    assert result.exit_code == 2 and "not a gitswarm run" in result.output


def test_reducer_batches_and_marks_dirty_panels():
    state = DashState()
    dirty = state.apply([event_of("run_started", {"run": "r", "model": "m", "budget": 3, "workers": 1,
                                               "charged": 0, "problems": ["a"]}, 1.0)])
    assert {"header", "problems"} <= dirty and state.problems["a"].state == "open"
    dirty = state.apply([event_of("episode_started", {"episode": "e1", "worker": "w01", "problem": "a"}, 2.0),
                         event_of("step", {"episode": "e1", "worker": "w01", "problem": "a", "step": 2}, 3.0)])
    assert state.workers["w01"].step == 2 and state.problems["a"].in_flight == 1 and "workers" in dirty
    state.apply([event_of("committed", {"episode": "e1", "worker": "w01", "problem": "a", "commit": "abc",
                                     "tokens": 10, "charged": 1}, 4.0)])
    assert state.workers["w01"].state == "merging" and state.problems["a"].contributions == 1
    assert state.problems["a"].in_flight == 0
    assert state.header.tokens == 10 and state.feed_total == 1 and state.apply([]) == set()
    assert "workers" in state.apply([event_of("merged", {"commit": "def", "episodes": ["e1"]}, 5.0)])
    assert state.workers["w01"].state == "idle" and state.feed_total == 2
    state.apply([event_of("episode_started", {"episode": "e2", "worker": "w01", "problem": "a"}, 6.0),
                 event_of("committed", {"episode": "e2", "worker": "w01", "problem": "a", "commit": "abd",
                                     "tokens": 5, "charged": 2}, 7.0),
                 event_of("episode_started", {"episode": "e3", "worker": "w01", "problem": "a"}, 8.0)])
    assert state.workers["w01"].state == "thinking" and state.problems["a"].in_flight == 1


def test_a_worker_whose_call_is_retried_shows_it_and_its_failure_frees_it():
    state = DashState()
    state.apply([event_of("run_started", {"run": "r", "model": "m", "budget": 3, "workers": 1, "charged": 0,
                                       "problems": ["a"]}, 1.0),
                 event_of("episode_started", {"episode": "e1", "worker": "w01", "problem": "a"}, 2.0)])
    dirty = state.apply([event_of("retry", {"episode": "e1", "worker": "w01", "problem": "a", "error": "stream_cut",
                                         "what": "the server ended the reply early", "attempt": 1, "delay": 1.0},
                               3.0)])
    assert state.workers["w01"].state == "retrying" and "workers" in dirty
    state.apply([event_of("failed", {"episode": "e1", "worker": "w01", "problem": "a", "failure": "provider",
                                  "tokens": 0, "charged": 0}, 4.0)])
    assert state.workers["w01"].state == "idle" and state.problems["a"].in_flight == 0


def test_demo_tui_in_a_real_terminal_stops_on_q_and_keeps_the_run(tmp_path: Path):
    """`gitswarm demo --tui` as a user runs it: a pseudo-terminal of 80x24, q to stop."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import termios

    from conftest import fsck_clean

    run = tmp_path / "run"
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI on the terminal
        os.environ["TERM"] = "xterm-256color"
        os.execvp(sys.executable, [sys.executable, "-m", "gitswarm", "demo", "--tui", "--run", str(run),
                                   "--latency", "0.5"])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    screen = bytearray()

    def read_until(needle: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    screen.extend(os.read(fd, 65536))
                except OSError:  # the child closed the terminal
                    return needle in screen
            if needle in screen:
                return True
        return False

    try:
        assert read_until(b"demo-odd-sum", 60), "the dashboard never showed the problems"
        assert read_until(b"thinking", 30), "no worker was shown at work"
        os.write(fd, b"q")  # graceful stop: episodes in flight finish, nothing new starts
        assert read_until(b"stopped by the user", 60)
        os.write(fd, b"q")  # the final state stays on screen until the second q
        read_until(b"Read the reasoning", 30)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 130  # stopped by the user, as after Ctrl-C
    assert b"Traceback" not in screen
    assert fsck_clean(run)
    shown = subprocess.run([sys.executable, "-m", "gitswarm", "status", str(run), "--json"],
                           capture_output=True, text=True, check=True)
    assert '"charged"' in shown.stdout


def test_a_snapshot_and_the_events_count_a_nomination_once(voted_run: Path):
    """Attached to a finished run, the first read of the repository may come before the event
    log's `nominated` events: the row shows main's nominations, not their sum with the events."""
    from gitswarm.memory.repo import Memory
    from gitswarm.readmodel.read import read_run
    from gitswarm.tui.state import merge_snapshot
    from gitswarm.tui.tail import LogTail

    run = voted_run
    model, events = read_run(Memory(run)), LogTail(run).read()
    for first, then in ((lambda s: merge_snapshot(s, model), lambda s: s.apply(events)),
                        (lambda s: s.apply(events), lambda s: merge_snapshot(s, model))):
        state = DashState()
        first(state)
        then(state)
        for problem in model.problems:
            row = state.problems[problem.id]
            assert row.nominations == problem.nomination_total >= 1, problem.id
            assert (row.state, row.selected, row.grade) == ("selected", problem.selected_path, "-")


async def test_full_kind_names_and_one_word_for_nominations(run: Path):
    app = Dashboard(run)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: app.state.header.stopped and app.state.problems["demo-shout"].kind != "?")
        await pilot.pause(0.3)
        table = app.query_one(ProblemsTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert "nominations" in labels and "noms" not in labels and "votes" not in labels
        kinds = {str(table.get_cell(pid, "kind")) for pid in DEMO_PROBLEMS}
        assert kinds == {"answer", "proof", "program", "reproduce"}
        kind = next(c for c in table.columns.values() if str(c.label) == "kind")
        assert kind.get_render_width(table) - 2 * table.cell_padding >= len("reproduce")  # never cut to "repr"
        workers = app.query_one(WorkersTable)
        states = {str(workers.get_cell(w, "state")) for w in app.state.workers}
        assert states == {"exited"}  # the run stopped: its workers are gone, not waiting for work
        await pilot.press("q")


async def test_the_dashboard_says_it_is_starting_before_the_first_event(tmp_path: Path):
    import anyio

    gate = anyio.Event()

    async def engine(listener):
        await gate.wait()  # the engine still loading the model library

    app = Dashboard(tmp_path / "run", engine=engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        header = text_of(app.query_one("RunHeader"))
        assert "starting: loading the model library" in header and "no episode has started yet" in header
        app.post_message(EventsArrived([event_of("run_started", {"run": "r", "model": "m", "budget": 3, "workers": 1,
                                                              "charged": 0, "problems": ["a"]}, time.time())]))
        await settle(pilot, lambda: "run r" in text_of(app.query_one("RunHeader")))
        assert "starting" not in text_of(app.query_one("RunHeader"))
        gate.set()
        await settle(pilot, lambda: app.finished)
        await pilot.press("q")
    assert Dashboard(tmp_path / "run").state.header.waiting == "reading the run…"


def test_workers_exit_when_the_run_stops_and_come_back_on_resume():
    state = DashState()
    started = event_of("run_started", {"run": "r", "model": "m", "budget": 3, "workers": 1, "charged": 0,
                                    "problems": ["a"]}, 1.0)
    state.apply([started, event_of("episode_started", {"episode": "e1", "worker": "w01", "problem": "a"}, 2.0),
                 event_of("run_stopped", {"reason": "budget", "detail": "budget spent"}, 3.0)])
    assert state.workers["w01"].state == "exited" and state.problems["a"].in_flight == 0
    from gitswarm.tui.header import header_text

    assert "in flight 0/1" in header_text(state, now=4.0)
    state.apply([started])
    assert state.workers["w01"].state == "idle"


async def test_the_demo_grades_its_solutions_inside_the_dashboard(run: Path, tmp_path: Path):
    """The run ends by itself, the dashboard stays up, and the grades `after` stores (the demo's
    grading) show in its table before the user quits."""
    import shutil
    from types import SimpleNamespace

    from gitswarm.cli.demo import _grade_quietly
    from gitswarm.core.stops import Stop, StopReason
    from gitswarm.problems.loader import load_set
    from gitswarm.resources import data_dir

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    subprocess.run(["git", "-C", str(copy), "update-ref", "-d", "refs/gitswarm/grades"], check=True)

    async def engine(listener):
        return SimpleNamespace(reason=Stop(StopReason.BUDGET, "budget of 60 episodes spent"))

    demo = load_set(data_dir("problems") / "demo")
    app = Dashboard(copy, engine=engine, after=lambda: _grade_quietly(copy, demo))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.finished and app.state.problems)
        await settle(pilot, lambda: all(row.grade != "-" for row in app.state.problems.values()), timeout=120)

        def toasts() -> str:  # the notifications textual keeps to show (no public reader)
            return " ".join(n.message for n in app._notifications)

        await settle(pilot, lambda: "graded:" in toasts())
        assert "grading the selected" not in toasts()  # the grading toast is gone once grading is done
        await pilot.press("q")
    graded = subprocess.run(["git", "-C", str(copy), "rev-parse", "--verify", "refs/gitswarm/grades"])
    assert graded.returncode == 0  # stored by the grading in the dashboard, not read from before


def test_the_demos_critical_review_is_in_the_feed_and_the_graph(run: Path):
    """The demo's story in the dashboard's own panels: the review's verdict in the feed (from
    the run's events) and in the problem's contribution graph (from the history)."""
    from gitswarm.engine.events import read_events
    from gitswarm.memory.repo import Memory
    from gitswarm.tui.reader import graph_text

    state = DashState()
    state.feed = state.feed.__class__(maxlen=None)  # the whole run's feed, not the last screenful
    state.apply(list(read_events(run)))
    reviews = [item for item in state.feed if item.kind == "review"]
    assert any(item.summary.startswith("attempts/") and item.summary.endswith(": critical") for item in reviews)
    assert "[critical]" in graph_text(Memory(run), "demo-odd-sum")


def test_reads_over_one_kept_index_agree_with_a_fresh_read_as_commits_land(run: Path, tmp_path: Path):
    """The dashboard keeps one index between reads: main moved forward step by step (the demo
    run's merges replayed on a copy), each read over it equals a fresh read of the same main."""
    import shutil

    import pygit2

    from gitswarm.memory.compose import MAIN
    from gitswarm.memory.repo import Memory
    from gitswarm.readmodel.read import read_run
    from gitswarm.tui.reader import Snapshots

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    memory, snapshots = Memory(copy), Snapshots()
    walker = memory.repo.walk(memory.repo.references[MAIN].target)
    walker.simplify_first_parent()
    tips = [str(c.id) for c in walker][::-1]
    assert len(tips) >= 8
    seen = []
    for tip in [*tips[1::max(1, len(tips) // 6)], tips[-1]]:
        memory.repo.references.create(MAIN, pygit2.Oid(hex=tip), force=True)  # the test moves main; no run does
        kept = snapshots.read(memory)
        assert kept == read_run(Memory(copy)), tip
        seen.append(kept)
    assert seen[0] != seen[-1]
    assert sum(len(p.candidates) for p in seen[0].problems) < sum(len(p.candidates) for p in seen[-1].problems)
    assert all(p.state == "selected" for p in seen[-1].problems)


def test_a_running_workers_time_counts_its_episode_not_its_step():
    from gitswarm.tui.tables import worker_cells

    state = DashState()
    state.apply([event_of("episode_started", {"episode": "e1", "worker": "w01", "problem": "a"}, 100.0),
                 event_of("step", {"episode": "e1", "worker": "w01", "problem": "a", "step": 3}, 130.0),
                 event_of("tool", {"episode": "e1", "worker": "w01", "problem": "a", "tool": "read_file"}, 131.0)])
    cells = dict(zip(("worker", "episode", "problem", "state", "step", "tokens", "time"),
                     worker_cells(state.workers["w01"], now=145.0), strict=True))
    assert cells["time"] == "45s" and cells["step"] == 3 and cells["state"] == "tool"


def test_a_running_workers_tokens_grow_with_its_steps():
    """Each `step` event carries the episode's tokens so far: the column moves while it runs."""
    state = DashState()
    state.apply([event_of("episode_started", {"episode": "e1", "worker": "w01", "problem": "a"}, 1.0),
                 event_of("step", {"episode": "e1", "worker": "w01", "problem": "a", "step": 1, "tokens": 0}, 2.0),
                 event_of("step", {"episode": "e1", "worker": "w01", "problem": "a", "step": 2, "tokens": 1234}, 3.0)])
    assert state.workers["w01"].tokens == 1234
    state.apply([event_of("step", {"episode": "e1", "worker": "w01", "problem": "a", "step": 3}, 4.0)])
    assert state.workers["w01"].tokens == 1234  # an older event log's step, without tokens, keeps the last


def test_dashboard_without_a_terminal_prints_the_status_and_ends(tmp_path_factory: pytest.TempPathFactory):
    """`gitswarm dashboard RUN | cat`: no escape codes and no wait, the run's status, exit 0."""
    from demo_run import demo_run

    run = demo_run(tmp_path_factory)
    done = subprocess.run([sys.executable, "-m", "gitswarm", "dashboard", str(run)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "needs a terminal" in done.stderr and "\x1b" not in done.stdout
    assert done.stdout.startswith("run ") and "demo-odd-sum" in done.stdout


async def test_a_frame_that_fires_while_the_app_shuts_down_draws_nothing(tmp_path: Path):
    """The frame timer can tick once more while the app takes its widgets down (it did so in a
    CI run, under load): that frame must fold its events in and draw nothing, not end the app with
    an error."""
    app = Dashboard(tmp_path / "run")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0)
    assert not app.is_running and not app.query("RunHeader")  # the widgets are gone, as during the shutdown
    app.pending.append(event_of("run_started", {"run": "r", "model": "m", "budget": 3, "workers": 1, "charged": 0,
                                                "problems": ["a"]}, time.time()))
    app.flush()
    assert app.state.header.run == "r"
