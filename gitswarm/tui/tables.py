"""The problems, workers and worker-process tables: rows keyed by id, updated in place."""

from __future__ import annotations

import time

from textual.widgets import DataTable

from gitswarm.readmodel.workers import HEADERS as PROCESS_COLUMNS
from gitswarm.readmodel.workers import WorkerState
from gitswarm.tui.rows import RESTING, ProblemRow, WorkerRow

PROBLEM_COLUMNS = ("problem", "kind", "state", "contrib", "lemmas", "attempts", "nominations", "verified",
                   "grade")
WORKER_COLUMNS = ("worker", "episode", "problem", "state", "step", "tokens", "time")


class KeyedTable(DataTable):
    """A DataTable whose rows are keyed by id and rewritten only when their cells change."""

    COLUMNS: tuple[str, ...] = ()

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for name in self.COLUMNS:
            self.add_column(name, key=name)
        self._shown: dict[str, tuple] = {}

    def put(self, key: str, cells: tuple) -> None:
        """Add the row `key` or update the cells that changed."""
        old = self._shown.get(key)
        if old == cells:
            return
        if old is None:
            self.add_row(*cells, key=key)
        else:
            for name, new, was in zip(self.COLUMNS, cells, old, strict=True):
                if new != was:
                    self.update_cell(key, name, new, update_width=True)  # "?" becomes "reproduce"
        self._shown[key] = cells

    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)


class ProblemsTable(KeyedTable):
    """Problems: id, kind, state, counts, nominations, verification, grade."""

    COLUMNS = PROBLEM_COLUMNS

    def show(self, rows: list[ProblemRow]) -> None:
        for r in rows:
            state = f"{r.state} ({r.in_flight})" if r.in_flight else r.state
            self.put(r.id, (r.id, r.kind, state, r.contributions, r.lemmas, r.attempts, r.nominations,
                             r.verification, r.grade))


def worker_cells(w: WorkerRow, now: float) -> tuple:
    """One worker's row: `time` is its episode's so far (counting each second while it runs, not
    reset by each step), `tokens` its last finished episode's (the engine's step events carry none)."""
    spent = "-" if w.state in RESTING else f"{now - w.began:.0f}s"
    return (w.id, w.episode, w.problem, w.state, w.step, w.tokens, spent)


class WorkersTable(KeyedTable):
    """Workers: id, episode, problem, state, step, tokens, time in the episode."""

    COLUMNS = WORKER_COLUMNS

    def show(self, rows: list[WorkerRow], now: float | None = None) -> None:
        now = now or time.time()
        for w in sorted(rows, key=lambda r: r.id):
            self.put(w.id, worker_cells(w, now))


class ProcessesTable(KeyedTable):
    """In a run on a git remote, the worker processes as the read model has them (the cells
    `status` and the report show); hidden in a local run."""

    COLUMNS = PROCESS_COLUMNS

    def show(self, rows: tuple[WorkerState, ...]) -> None:
        self.display = bool(rows)
        for w in rows:
            self.put(w.name, w.cells())
