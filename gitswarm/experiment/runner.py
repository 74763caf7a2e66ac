"""Run every arm × seed of an experiment that is not finished, `parallel` at a time, in one
event loop; a run cut mid-way (Ctrl-C, a kill) is resumed by the engine itself the next time.
After each run its selected solutions are graded. `experiment.json` in the experiment's folder
lists the runs and their state; the runs' own event logs, not that file, say what is finished."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from gitswarm.engine.stops import StopReason
from gitswarm.experiment.figures import INTERRUPTED, PENDING, RunStatus, read_figures, run_status
from gitswarm.experiment.spec import RunPlan, Spec, SpecError

if TYPE_CHECKING:
    from gitswarm.engine.events import Listener
    from gitswarm.engine.run import RunResult
    from gitswarm.engine.swarm import Control

JOURNAL = "experiment.json"
BROKEN = frozenset({StopReason.PROVIDER_FAILING, StopReason.MODEL_FATAL, StopReason.ENGINE_ERRORS})
"""Stops that say the run measured the provider or gitswarm, not the arm: the experiment says
so and exits 1. A run that made no progress is a result of its arm, not one of these."""

Start = Callable[[RunPlan, "Control", list["Listener"]], Awaitable["RunResult"]]
"""Runs one plan's engine with the experiment's Control and the given event listeners."""
Grade = Callable[[RunPlan], Awaitable[list[str]]]
"""Grades one run's selected solutions; returns why anything stayed ungraded."""


@dataclass
class Runner:
    """Runs an experiment's missing runs; `say` gets one line per run started and ended."""

    spec: Spec
    start: Start
    grade: Grade
    say: Callable[[str], None]
    control: Control
    """The engine's `Control`, shared by every run: a stop asked for stops them all."""
    parallel: int = 1
    states: dict[str, dict] = field(default_factory=dict)

    def prepare(self) -> list[RunPlan]:
        """Check the runs already made against the spec, write experiment.json, and return the
        runs that are not finished, in the spec's order."""
        folder = self.spec.folder
        folder.mkdir(parents=True, exist_ok=True)
        self._check_unchanged(_recorded(folder / JOURNAL))
        statuses = {plan.name: run_status(plan.config.run) for plan in self.spec.runs}
        self.states = {plan.name: self._entry(plan, statuses[plan.name]) for plan in self.spec.runs}
        self._write()
        todo = [p for p in self.spec.runs if not statuses[p.name].finished]
        self.say(f"experiment {self.spec.name}: {len(self.spec.runs)} runs ({len(self.spec.arms)} arms × "
                 f"{len(self.spec.seeds)} seeds) in {folder}; {len(self.spec.runs) - len(todo)} finished earlier, "
                 f"{len(todo)} to run, {self.parallel} at a time")
        return todo

    async def run(self) -> dict[str, RunStatus]:
        """Every run not finished, `parallel` at a time; returns where each stands at the end."""
        todo = self.prepare()
        limiter = anyio.CapacityLimiter(self.parallel)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.grade_earlier, todo)
            for plan in todo:
                tg.start_soon(self._limited, plan, limiter)
        return self.statuses()

    def statuses(self) -> dict[str, RunStatus]:
        return {plan.name: run_status(plan.config.run) for plan in self.spec.runs}

    async def grade_earlier(self, todo: list[RunPlan]) -> None:
        """Grade the runs finished earlier (free where grades are stored: a run killed between
        its end and its grading gets them now)."""
        for plan in self.spec.runs:
            if plan not in todo:
                await self._graded(plan)

    async def _limited(self, plan: RunPlan, limiter: anyio.CapacityLimiter) -> None:
        async with limiter:
            if not self.control.stop.is_set():
                await self.run_one(plan)

    async def run_one(self, plan: RunPlan, listeners: list[Listener] | None = None) -> RunResult:
        """Run (or resume) one run to its end, then grade it."""
        self._update(plan, state="running")
        self.say(f"started  {plan.arm} seed {plan.seed}: {plan.config.run}")
        result = await self.start(plan, self.control, list(listeners or []))
        if result.reason.reason == StopReason.USER:
            self._update(plan, state=INTERRUPTED, reason=StopReason.USER.value)
            self.say(f"stopped  {plan.arm} seed {plan.seed} by the user: the same command resumes it")
        else:
            await self._graded(plan, fresh=True)
        return result

    async def _graded(self, plan: RunPlan, fresh: bool = False) -> None:
        """Grade the run, record its figures and say how it ended."""
        ungraded = await self.grade(plan)
        figures = read_figures(plan.arm, plan.seed, plan.config.run)
        self._update(plan, state=figures.state, reason=figures.reason, detail=figures.detail,
                     solved=figures.solved, graded=figures.graded, problems=len(figures.scores),
                     episodes=figures.episodes, tokens=figures.tokens)
        said = "finished" if fresh else "earlier "
        said += f" {plan.arm} seed {plan.seed}" + ("" if fresh else " (not run again)")
        self.say(f"{said}: {figures.reason} ({figures.detail}); solved {figures.solved} of {len(figures.scores)}, "
                 f"{figures.episodes} episodes, {figures.tokens} tokens")
        if figures.reason in BROKEN:
            self.say(f"  warning: {plan.name} ended by {figures.reason}: it measured the provider or gitswarm, not "
                     f"the arm; remove {plan.config.run} and run the experiment again to redo it")
        for message in ungraded:
            self.say(f"  {plan.name} left ungraded: {message}")

    def _entry(self, plan: RunPlan, status: RunStatus) -> dict:
        return {"arm": plan.arm, "seed": plan.seed, "path": str(plan.config.run), "state": status.state,
                "reason": status.reason, "detail": status.detail, "settings": self._settings(plan)}

    def _settings(self, plan: RunPlan) -> dict:
        """What a run is made with, as experiment.json records it: its SolveConfig (the run's
        folder is where it is; a new folder is not a new setting) and the scripted solver's chances."""
        scripted = self.spec.scripted
        return plan.settings() | ({"scripted": scripted.model_dump()} if scripted is not None else {})

    def _update(self, plan: RunPlan, **changes: object) -> None:
        self.states[plan.name].update(changes)
        self._write()

    def _write(self) -> None:
        """experiment.json, replaced whole (a kill never leaves half a file)."""
        spec = self.spec
        data = {"name": spec.name, "spec": str(spec.path), "problems": str(spec.problem_set.path),
                "baseline": spec.baseline, "budget": spec.budget.describe(), "seeds": list(spec.seeds),
                "arms": spec.arms, "runs": [{"name": name, **entry} for name, entry in self.states.items()]}
        path = spec.folder / JOURNAL
        part = path.with_suffix(".json.part")
        part.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(part, path)

    def _check_unchanged(self, recorded: dict[str, dict]) -> None:
        """Refuse to resume a run under settings other than those it started with."""
        for plan in self.spec.runs:
            before = recorded.get(plan.name)
            if before is None or run_status(plan.config.run).state == PENDING:
                continue
            now = self._settings(plan)
            changed = sorted(k for k in set(before) & set(now) - {"run"} if before[k] != now[k])
            if changed:
                shown = ", ".join(f"{k}: {before[k]!r} -> {now[k]!r}" for k in changed)
                raise SpecError(f"{self.spec.path}: the run {plan.name} in {self.spec.folder} started with other "
                                f"settings ({shown}); put the changed experiment in a new folder (--out), or "
                                f"remove {plan.config.run} to run it again")


def _recorded(path: Path) -> dict[str, dict]:
    """Each run's settings as experiment.json recorded them (none when it is missing or unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    runs = data.get("runs") if isinstance(data, dict) else None
    return {r["name"]: r["settings"] for r in runs if isinstance(r, dict) and isinstance(r.get("name"), str)
            and isinstance(r.get("settings"), dict)} if isinstance(runs, list) else {}

