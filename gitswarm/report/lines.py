"""The one-line phrases `gitswarm status` and the report share: usage, failures, the rule, money.

Apart from `report.render` so that `status` prints them without importing the report's
collection and drawing."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitswarm.report.settings import RunSettings


def usage_line(parts: dict[str, int]) -> str:
    """The parts of a run's usage in one line (`Totals.parts()`)."""
    return (f"input {parts['tokens_in']:,} tokens (cache read {parts['cache_read']:,}, cache write "
            f"{parts['cache_write']:,}), output {parts['tokens_out']:,} (reasoning {parts['reasoning']:,}); "
            f"{parts['calls']:,} calls, {parts['failed_calls']:,} failed"
            + (f"; {parts['estimated_tokens']:,} of the tokens counted by gitswarm (the server sent no count)"
               if parts.get("estimated_tokens") else ""))


def failed_line(failed: dict[str, int]) -> str:
    """Failed episodes by class, in one phrase: whose failure each was."""
    return ("failed episodes: " + ", ".join(f"{n:,} {kind}" for kind, n in failed.items())
            + " (provider: no whole reply; model: its replies went nowhere; engine: an error inside gitswarm; "
            "context: the conversation outgrew the model's context window)")


def rule_line(settings: RunSettings) -> str:
    """The run's rule in a few words, as `status` shows it: K (in a row), who reviews and on
    which model, the isolation."""
    parts = [f"verify K = {settings.verify}" + (" in a row" if settings.in_row else "")]
    parts.append(f"reviews {review_mode(settings)}" + (f" on {settings.reviewer}" if settings.reviewer else ""))
    parts.append(f"isolation {settings.isolation or 'shared'}")
    return "rule: " + ", ".join(parts)


def review_mode(settings: RunSettings) -> str:
    """How the run's candidates were reviewed: as set (open, assigned, blind), but blind in a
    best-of-n run whatever its setting, as its reviews are."""
    return "blind" if settings.isolation == "best-of-n" else settings.reviews or "open"


def unconfined_line(settings: RunSettings) -> str:
    """What `status` and the report say of a run whose programs ran without a sandbox."""
    return (f"Programs ran UNCONFINED (solve --unconfined; sandbox: {settings.sandbox}): they could read this "
            "machine's files, hidden tests and references included, so code grades are not evidence.")


def spent_line(cost: float, known: bool) -> str:
    """Money spent, honest about calls litellm has no price for."""
    if known:
        return f"USD {cost:.4f}"
    return "cost unknown (no price for this model)" if cost == 0 else f"USD {cost:.4f} + unpriced calls"
