"""The dashboard's header counters: tokens, episodes and USD never go backwards, and the cost of
a model without a price says "unknown" from the start (never a USD 0.0000 first)."""

from __future__ import annotations

from gitswarm.core.events import event_of
from gitswarm.readmodel.model import RunState, RunTotals
from gitswarm.tui.header import header_text
from gitswarm.tui.reducer import fold
from gitswarm.tui.state import DashState, merge_snapshot


def read(tokens: int, cost: float, known: bool = True, charged: int = 1) -> RunState:
    """A read of the ledger: its tokens (in-flight episodes' calls included) and cost."""
    return RunState(RunTotals("r", charged, charged, tokens, 0, 0, 0, 0, 1, 0, 0, cost, known, 0), ())


def ended(episode: str, tokens: int, charged: int) -> object:
    return event_of("committed", {"episode": episode, "worker": "w01", "problem": "p", "commit": "c" * 40,
                                  "tokens": tokens, "charged": charged}, 1.0)


def test_tokens_never_go_backwards_and_end_at_the_ledgers_count():
    s = DashState()
    shown = []
    fold(s, ended("e1", 100, 1))
    shown.append(s.header.tokens)
    merge_snapshot(s, read(250, 0.0, charged=1))  # e2 is in flight with 150 tokens charged to the ledger
    shown.append(s.header.tokens)
    fold(s, ended("e2", 150, 2))  # its tokens are in the ledger's count already: not added again
    shown.append(s.header.tokens)
    fold(s, event_of("run_stopped", {"reason": "budget", "charged": 2, "tokens": 250}, 2.0))
    shown.append(s.header.tokens)
    assert shown == sorted(shown) and shown[-1] == 250


def test_an_unpriced_model_is_unknown_from_the_start():
    s = DashState()
    s.header.priced = False  # as the command that runs it says (`cli.running`)
    s.header.started = 0.0
    merge_snapshot(s, read(10, 0.0))  # no call had a price to miss yet
    assert "USD unknown" in header_text(s, now=1.0) and "0.0000" not in header_text(s, now=1.0)


def test_cost_stays_unknown_once_a_call_had_no_price_and_never_drops():
    s = DashState()
    s.header.started = 0.0
    merge_snapshot(s, read(10, 0.5))
    merge_snapshot(s, read(5, 0.25))  # an older read, arriving late
    assert s.header.cost == 0.5
    merge_snapshot(s, read(20, 0.5, known=False))
    merge_snapshot(s, read(30, 0.75))
    assert s.header.cost is None and "USD unknown" in header_text(s, now=1.0)


def test_the_help_overlay_lines_fit_inside_it():
    from gitswarm.tui.screens import HELP

    assert max(len(line) for line in HELP.splitlines()) <= 74  # 78 wide, less its border and padding
