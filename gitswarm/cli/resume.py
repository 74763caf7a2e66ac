"""A resume with other settings than the run's: said before anything runs, old and new; a change
of the selection rule that would change what the run has already decided (a problem settled,
a solution selected or verified) is refused unless the user asks for it by name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from gitswarm.core.event_types import RunStarted
from gitswarm.core.events import EVENT_LOG, read_events
from gitswarm.domain.rule import Rule
from gitswarm.errors import BadInput

STARTED = ("model", "budget", "reviewer_model", "reviews", "isolation", "workers")
"""The settings of a `run_started` event a resume may change, compared as named."""
RULE = {"verify": "verify", "settle_nominations": "settle_nominations", "in_row": "verify_in_row",
        "nominations": "nominations (off under --isolation best-of-n)"}
"""The rule's fields, with the setting that gives each."""


@dataclass(frozen=True)
class Decided:
    """What the run has decided of one problem under a rule: its leader, verified or not, settled or not."""

    leader: str | None
    mark: str
    settled: bool

    def __str__(self) -> str:
        said = "settled" if self.settled else f"leads {self.leader[:10]}" if self.leader else "no candidate"
        return f"{said}, {self.mark}" if self.leader else said


def check_resume(cfg, option: str | None = "--change-rule", allowed: bool = False) -> None:
    """Before a run resumes: say on stderr which settings differ from its last start (old and
    new); refuse (BadInput) a rule that would change what is decided, unless `allowed` (the
    command's `option`, None for a command without one)."""
    from gitswarm.memory.errors import NotARun
    from gitswarm.memory.repo import Memory

    if not _is_run(cfg.run):
        return
    try:
        memory = Memory(cfg.run)
    except NotARun:
        return  # the engine refuses it, in its own words (a folder in the way, not a run)
    old, new = _stored_rule(memory), Rule.of(cfg)
    changes = _started_changes(cfg) + (_rule_changes(old, new) if old is not None else [])
    if changes:
        typer.echo(f"gitswarm: resuming {cfg.run} with settings that differ from its last start: "
                   f"{'; '.join(changes)}", err=True)
    if old is None or old == new or allowed:
        return
    moved = _moved(memory, cfg.problem_ids, old, new)
    if moved:
        more = f"; and {len(moved) - 3} more" if len(moved) > 3 else ""
        own = ", ".join(f"{said} {getattr(old, name)}" for name, said in RULE.items()
                        if getattr(old, name) != getattr(new, name))
        fix = (f"give {option} to decide them again under the new rule, or resume with the run's own rule ({own})"
               if option else f"give another --run (this command has its own rule), or resume the run with "
               f"`gitswarm solve` and its own rule ({own})")
        raise BadInput(f"the new selection rule would change what {cfg.run} has decided: {'; '.join(moved[:3])}{more}",
                       fix=fix)


def _is_run(folder: Path) -> bool:
    return Path(folder).is_dir() and any(Path(folder).iterdir())


def _stored_rule(memory) -> Rule | None:
    """The rule the run recorded (its ledger's scheduler record); None for a run without one."""
    from gitswarm.readmodel.read import scheduler_record

    record = scheduler_record(memory).get("selection")
    return Rule.from_record(record) if isinstance(record, dict) else None


def _started_changes(cfg) -> list[str]:
    """The settings of the run's last local start (its event log) that this one changes."""
    starts = [e for e in read_events(Path(cfg.run) / EVENT_LOG) if isinstance(e, RunStarted) and e.worker is None]
    if not starts:
        return []
    last = starts[-1]
    now = {"model": cfg.model, "budget": cfg.budget, "reviewer_model": cfg.reviewer_model,
           "reviews": cfg.reviews, "isolation": cfg.isolation, "workers": cfg.workers}
    return [f"{name} {now[name]} (was {getattr(last, name)})" for name in STARTED
            if str(getattr(last, name)) != str(now[name])]


def _rule_changes(old: Rule, new: Rule) -> list[str]:
    return [f"{said} {getattr(new, name)} (was {getattr(old, name)})" for name, said in RULE.items()
            if getattr(old, name) != getattr(new, name)]


def _moved(memory, wanted, old: Rule, new: Rule) -> list[str]:
    """Each problem the run has decided (settled, verified or selected) whose leader, verification
    or settling the new rule changes: "id: old -> new"."""
    from gitswarm.domain.index import MemoryIndex
    from gitswarm.referee.grades import GradeStore

    index = MemoryIndex()
    memory.snapshot().catch_up(index)
    grades = GradeStore(memory)
    moved = []
    for problem in memory.problems():
        if wanted and problem not in wanted:
            continue
        scores = grades.scores(problem)
        before, after = _decided(index, problem, old, scores), _decided(index, problem, new, scores)
        selected = memory.read_file(f"problems/{problem}/SOLUTION.md") is not None
        if (before.settled or before.mark == "verified" or selected) and before != after:
            moved.append(f"{problem}: {before} -> {after}")
    return moved


def _decided(index, problem: str, rule: Rule, scores: dict[str, float]) -> Decided:
    from gitswarm.domain import selection

    found = selection.standings(index, problem, rule)
    choice = selection.choose(found, rule, scores)
    return Decided(choice.commit if choice else None, choice.mark.value if choice else "-",
                   selection.settles(found, rule, scores))
