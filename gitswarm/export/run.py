"""`export`: a run's episodes as JSONL records, filtered, in the chosen layout."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from gitswarm.domain.episode import EpisodeRecord
from gitswarm.export.credit import step_rewards
from gitswarm.export.labels import OUTCOMES, Links, RunFacts, labels, read_facts
from gitswarm.export.records import Dialogue, chat_record, of_conversation, of_transcript, step_records
from gitswarm.memory.repo import Memory

Format = Literal["chat", "steps"]
ToolsOf = Callable[[str | None], list[dict]]
"""The tool schemas a problem of a kind was offered (`engine.tools.tool_schemas`), which the
command passes in: an old run's readable transcript names its tools by them."""
OUTCOME_FILTERS = (*OUTCOMES.values(), "failed:model", "failed:provider", "failed:engine")


@dataclass(frozen=True)
class Filters:
    """Which episodes to export; None (or False) keeps every one."""

    problem: str | None = None
    outcome: str | None = None
    """An outcome (contributed, nominated, abstained, failed, stopped, running), or a failure
    class as failed:model, failed:provider, failed:engine."""
    min_grade: float | None = None
    """The problem's grade as a fraction of its maximum, at least this (an ungraded problem fails it)."""
    ancestry_only: bool = False

    def refusal(self, facts: RunFacts) -> str | None:
        """Why these filters can match nothing in this run, naming what they could match; None
        when they can."""
        if self.problem is not None and self.problem not in facts.problems:
            return f"no problem {self.problem!r} in this run; its problems: {', '.join(facts.problems)}"
        if self.outcome is not None and self.outcome not in OUTCOME_FILTERS:
            return f"no outcome {self.outcome!r}; choose one of {', '.join(OUTCOME_FILTERS)}"
        return None

    def keep(self, label: dict) -> bool:
        outcome = label["outcome"] if not label["failure"] else f"{label['outcome']}:{label['failure']}"
        grade = (label["grade"] or {}).get("fraction")
        return ((self.problem is None or label["problem"] == self.problem)
                and (self.outcome is None or self.outcome in (label["outcome"], outcome))
                and (self.min_grade is None or (grade is not None and grade >= self.min_grade))
                and (not self.ancestry_only or label["in_ancestry"]))


def export(memory: Memory, tools_of: ToolsOf, layout: Format = "chat", facts: RunFacts | None = None,
           filters: Filters = Filters(), empty: list[str] | None = None) -> Iterator[dict]:
    """The run's episodes, oldest first, as chat records (one per episode) or steps records
    (one per model call); `facts` default to `read_facts` with the `ancestry` credit. An
    episode with nothing to lay out (no reply for a chat record, no call for steps: cut off
    by a crash first) makes no record; its id is added to `empty`."""
    facts = facts or read_facts(memory)
    links = Links.of(facts.graph)
    read = _reader(memory, tools_of)
    for record in facts.records:
        label = labels(facts, links, record)
        if not filters.keep(label):
            continue
        dialogue = read(record, label["kind"])
        if label["model"] is None and dialogue.model:
            label["model"] = dialogue.model
        if not (dialogue.messages if layout == "chat" else dialogue.steps):
            if empty is not None:
                empty.append(record.episode)
        elif layout == "chat":
            yield chat_record(dialogue, label)
        else:
            yield from step_records(dialogue, label, step_rewards(label["credit"], len(dialogue.steps)))


def _reader(memory: Memory, tools_of: ToolsOf) -> Callable[[EpisodeRecord, str | None], Dialogue]:
    """How to read an episode's conversation: its lossless record where the run has one, else
    its readable transcript."""
    from gitswarm.memory.conversations import read_conversation

    snapshot = memory.snapshot()

    def read(record: EpisodeRecord, kind: str | None) -> Dialogue:
        found = snapshot.read_with(read_conversation, record.episode)
        if found is not None:
            return of_conversation(found)
        text = memory.transcript(record.commit) if record.commit else None
        if text is None and record.transcript:
            text = memory.book_text(record.transcript)
        return of_transcript(text, tools_of(kind if kind and kind != "?" else None))

    return read
