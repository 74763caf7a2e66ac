"""The screens over the main view: a problem's detail, its contribution graph, help."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Markdown, Static

from gitswarm.memory.model import CommitInfo

HELP = """\
gitswarm dashboard

  up/down   move in a table          tab     next panel
  enter     detail of the problem    g       contribution graph
  p         pause / resume new episodes (solve only)
  q         quit (solve: finish the episodes in flight first,
            q again: stop now)
  escape    back                     ?       this help
"""
"""The keys, each line under 70 columns: the overlay is 74 wide inside, and a wrapped line
would break the columns."""


class DetailScreen(Screen):
    """A problem's history (newest first) and the selected item as Markdown."""

    BINDINGS: ClassVar = [Binding("escape,q", "app.pop_screen", "back"), Binding("g", "app.graph", "graph")]
    DEFAULT_CSS = """
    DetailScreen { layout: vertical; }
    DetailScreen > DataTable { height: 40%; }
    DetailScreen > VerticalScroll { height: 1fr; border-top: solid $primary; }
    """

    def __init__(self, problem: str, load_item: Callable[[CommitInfo], object]) -> None:
        super().__init__()
        self.problem = problem
        self.load_item = load_item
        """Reads a commit's item in the background; `show_item` gets it."""
        self.commits: dict[str, CommitInfo] = {}

    def compose(self) -> ComposeResult:
        yield Static(f"history of {self.problem} (newest first)", id="detail-title")
        table: DataTable[str] = DataTable(id="history", cursor_type="row", zebra_stripes=True)
        table.add_columns("commit", "kind", "worker", "subject")
        yield table
        with VerticalScroll():
            yield Markdown("*loading...*", id="item")
        yield Footer()

    def show_history(self, commits: list[CommitInfo]) -> None:
        table = self.query_one("#history", DataTable)
        table.clear()
        self.commits = {c.id: c for c in commits}
        for c in commits:
            table.add_row(c.id[:7], c.kind or "-", c.author, c.subject[:70], key=c.id)
        if not commits:
            self.query_one("#item", Markdown).update("*no commits on this problem yet*")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        commit = self.commits.get(str(event.row_key.value))
        if commit is not None:
            self.load_item(commit)

    def show_item(self, markdown: str) -> None:
        self.query_one("#item", Markdown).update(markdown)


class GraphScreen(ModalScreen):
    """The contribution graph of a problem as text."""

    BINDINGS: ClassVar = [Binding("escape,q,g", "app.pop_screen", "back")]
    DEFAULT_CSS = """
    GraphScreen { align: center middle; }
    GraphScreen > VerticalScroll { width: 95%; height: 90%; border: round $primary; background: $surface; }
    """

    def __init__(self, problem: str) -> None:
        super().__init__()
        self.problem = problem

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(f"reading the contribution graph of {self.problem}...", id="graph", markup=False)

    def show_graph(self, text: str) -> None:
        self.query_one("#graph", Static).update(text)


class HelpScreen(ModalScreen):
    """The keys."""

    BINDINGS: ClassVar = [Binding("escape,q,question_mark", "app.pop_screen", "back")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: 78; height: auto; border: round $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(HELP, markup=False)
