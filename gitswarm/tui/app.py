"""The dashboard app: panels fed by queued events, redrawn in batches at ~10 Hz.

Two ways in: attach (`follow` the run's event log, read the repository read-only) and
live (`engine` runs as an async worker on the app's loop; its listener posts messages).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer
from textual.worker import get_current_worker

from gitswarm.core.control import Control
from gitswarm.core.events import Event, Listener
from gitswarm.memory.model import CommitInfo
from gitswarm.tui import reader
from gitswarm.tui.feed import Feed
from gitswarm.tui.header import RunHeader
from gitswarm.tui.messages import EventsArrived, GraphRead, HistoryRead, ItemRead, RunFinished, SnapshotRead
from gitswarm.tui.screens import DetailScreen, GraphScreen, HelpScreen
from gitswarm.tui.state import DashState, mark_gone, merge_snapshot
from gitswarm.tui.tables import ProblemsTable, ProcessesTable, WorkersTable
from gitswarm.tui.tail import LogTail

Engine = Callable[[Listener], Awaitable[object]]
FRAME_S = 0.1
SNAPSHOT_S = 2.0
TAIL_S = 0.2


class Dashboard(App):
    """The live dashboard of one run."""

    TITLE = "gitswarm"
    CSS = """
    ProblemsTable { height: 1fr; min-height: 4; }
    WorkersTable { height: 1fr; min-height: 4; border-top: solid $primary; }
    ProcessesTable { height: auto; max-height: 10; border-top: solid $primary; display: none; }
    Feed { height: 1fr; min-height: 4; }
    """
    BINDINGS: ClassVar = [
        Binding("q", "quit_or_stop", "quit"),
        Binding("ctrl+c", "quit_or_stop", "quit", show=False, priority=True),
        Binding("p", "pause", "pause"),
        Binding("g", "graph", "graph"),
        Binding("question_mark", "help", "help"),
    ]

    def __init__(self, run: Path, engine: Engine | None = None, control: Control | None = None,
                 exit_when_done: bool = False, max_usd: float | None = None,
                 after: Callable[[], Awaitable[None]] | None = None, priced: bool = True) -> None:
        super().__init__()
        self.run_path = Path(run)
        self.engine = engine
        self.after = after
        """Work to do once the run has ended by itself (the demo grades its solutions), while the
        dashboard stays up and shows what it stores."""
        self.control = control or Control()
        self.exit_when_done = exit_when_done
        self.state = DashState()
        self.state.header.max_usd = max_usd
        self.state.header.priced = priced  # unpriced: "unknown" from the start, never a USD 0.0000 first
        self.state.header.waiting = ("starting: loading the model library and opening the run…" if engine
                                     else "reading the run…")
        self.pending: list[Event] = []
        self.result: object | None = None
        self.error: BaseException | None = None
        self.finished = engine is None
        self._memory = None
        self._snapshots = reader.Snapshots()
        self._ticks = 0

    def compose(self) -> ComposeResult:
        yield RunHeader()
        yield ProblemsTable(id="problems")
        yield WorkersTable(id="workers")
        yield ProcessesTable(id="processes")
        yield Feed(id="feed")
        yield Footer()

    def on_mount(self) -> None:
        self.redraw({"header"})  # "starting…" from the first frame, not an empty line until the first event
        self.set_interval(FRAME_S, self.flush)
        self.set_interval(SNAPSHOT_S, self.read_snapshot)
        self.read_snapshot()
        if self.engine is not None:
            self.run_worker(self._run_engine(self.engine), name="engine", group="engine", exit_on_error=False)
        else:
            self.tail_log()
        self.query_one(ProblemsTable).focus()

    # -- background work: only posts messages ---------------------------------------------

    async def _run_engine(self, engine: Engine) -> None:
        try:
            result = await engine(self._heard)
        except Exception as exc:  # handed to the CLI, which turns it into a message
            self.post_message(RunFinished(error=exc))
        else:
            self.post_message(RunFinished(result))

    def _heard(self, event: Event) -> None:
        self.post_message(EventsArrived([event]))

    @work(thread=True, exclusive=True, group="tail")
    def tail_log(self) -> None:
        tail, worker = LogTail(self.run_path), get_current_worker()
        while not worker.is_cancelled:
            events = tail.read()
            if events:
                self.post_message(EventsArrived(events))
            time.sleep(TAIL_S)

    def memory(self):
        """The run repository, opened read-only on first use (None until it exists)."""
        if self._memory is None:
            from gitswarm.memory.errors import NotARun

            try:
                self._memory = reader.open_memory(self.run_path)
            except NotARun:
                return None
        return self._memory

    @work(thread=True, exclusive=True, group="snapshot", exit_on_error=False)
    def read_snapshot(self) -> None:
        memory = self.memory()
        if memory is not None:
            held = reader.run_held(self.run_path) if self.engine is None else True
            self.post_message(SnapshotRead(self._snapshots.read(memory), held))

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_history(self, problem: str) -> None:
        memory = self.memory()
        if memory is not None:
            self.post_message(HistoryRead(problem, reader.history(memory, problem)))

    @work(thread=True, exclusive=True, group="item", exit_on_error=False)
    def load_item(self, commit: CommitInfo) -> None:
        memory = self.memory()
        if memory is not None:
            self.post_message(ItemRead(commit.id, reader.item_markdown(memory, commit)))

    @work(thread=True, exclusive=True, group="graph", exit_on_error=False)
    def load_graph(self, problem: str) -> None:
        memory = self.memory()
        text = reader.graph_text(memory, problem) if memory is not None else "the run has no repository yet"
        self.post_message(GraphRead(problem, text))

    # -- messages --------------------------------------------------------------------------

    def on_events_arrived(self, message: EventsArrived) -> None:
        self.pending.extend(message.events)

    def on_snapshot_read(self, message: SnapshotRead) -> None:
        dirty = merge_snapshot(self.state, message.snapshot)
        if mark_gone(self.state, message.held):
            dirty |= {"header", "workers"}
        self.redraw(dirty)

    def on_run_finished(self, message: RunFinished) -> None:
        self.result, self.error, self.finished = message.result, message.error, True
        self.flush()
        self.read_snapshot()
        reason = getattr(message.result, "reason", None) or f"error: {message.error}"
        stopped_by_user = getattr(reason, "reason", None) == "user"
        if self.after is not None and message.result is not None and not stopped_by_user:
            self.notify(f"run ended ({reason}); grading the selected solutions…", timeout=30)
            self.run_worker(self._after(self.after), name="after", group="after", exit_on_error=False)
        elif self.exit_when_done:
            self.exit()
        else:
            self.notify(f"run ended ({reason}); press q to quit", timeout=30)

    async def _after(self, after: Callable[[], Awaitable[None]]) -> None:
        """The post-run work; the grades it stores show in the table at the next read."""
        try:
            await after()
        finally:
            self.read_snapshot()
            if self.exit_when_done:
                self.exit()
            else:
                self.clear_notifications()  # the "grading…" toast would stay over every screen
                self.notify("graded: the grades are in the table; press q to quit", timeout=30)

    def on_history_read(self, message: HistoryRead) -> None:
        if isinstance(self.screen, DetailScreen) and self.screen.problem == message.problem:
            self.screen.show_history(message.commits)

    def on_item_read(self, message: ItemRead) -> None:
        if isinstance(self.screen, DetailScreen):
            self.screen.show_item(message.markdown)

    def on_graph_read(self, message: GraphRead) -> None:
        if isinstance(self.screen, GraphScreen) and self.screen.problem == message.problem:
            self.screen.show_graph(message.text)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if isinstance(event.data_table, ProblemsTable):
            problem = str(event.row_key.value)
            self.push_screen(DetailScreen(problem, self.load_item))
            self.load_history(problem)

    # -- frames ----------------------------------------------------------------------------

    def flush(self) -> None:
        """Fold the queued events in and redraw what they changed (plus the clock each second)."""
        batch, self.pending = self.pending, []
        dirty = self.state.apply(batch) if batch else set()
        self._ticks += 1
        if self._ticks % 10 == 0:
            dirty |= {"header", "workers"}
        if self.is_running:  # the timer can tick once more while the app takes its widgets down
            self.redraw(dirty)

    def redraw(self, dirty: set[str]) -> None:
        state = self.state
        state.header.paused = self.control.paused
        if "header" in dirty:
            self.query_one(RunHeader).show(state)
        if "problems" in dirty:
            self.query_one(ProblemsTable).show(list(state.problems.values()))
        if "workers" in dirty:
            self.query_one(WorkersTable).show(list(state.workers.values()))
        if "processes" in dirty:
            self.query_one(ProcessesTable).show(state.processes)
        if "feed" in dirty:
            self.query_one(Feed).show(state.feed, state.feed_total)

    # -- keys ------------------------------------------------------------------------------

    def selected_problem(self) -> str | None:
        if isinstance(self.screen, DetailScreen):
            return self.screen.problem
        return self.query_one(ProblemsTable).selected_key()

    def action_graph(self) -> None:
        problem = self.selected_problem()
        if problem is not None and not isinstance(self.screen, GraphScreen):
            self.push_screen(GraphScreen(problem))
            self.load_graph(problem)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        if self.engine is None:
            self.notify("pause works in `gitswarm solve`, not when attached", severity="warning")
            return
        self.control.paused = not self.control.paused
        self.notify("paused: no new episodes start" if self.control.paused else "resumed")
        self.redraw({"header"})

    def action_quit_or_stop(self) -> None:
        """Attached or finished: quit. Solving: first a graceful stop, then a cut of the episodes
        in flight (their transcripts kept), then stop at once."""
        if self.finished:
            self.exit()
        elif not self.control.stop.is_set():
            self.control.stop.set()
            self.notify("finishing the episodes in flight (q again to cut them short)", timeout=10)
        elif not self.control.cut.is_set():
            self.control.cut_now()
            self.notify("cutting the episodes in flight short, keeping their transcripts (q again to stop now)",
                        timeout=10)
        else:
            self.workers.cancel_group(self, "engine")
            self.exit()
