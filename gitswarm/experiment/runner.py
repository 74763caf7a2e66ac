"""Run every arm × seed of an experiment that is not finished, `parallel` at a time, in one
event loop; a run cut mid-way (Ctrl-C, a kill) is resumed by the engine itself the next time.
After each run its selected solutions are graded. Under equal tokens (`tokens = "smallest"`),
once every arm of a seed finished pass 1, the costlier arms' equal-spend runs (pass 2) follow.
`experiment.json` in the experiment's folder lists the runs and their state; the runs' own
event logs, not that file, say what is finished."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from gitswarm.core.stops import StopReason
from gitswarm.experiment.budget import EqualSpend, equal_spend
from gitswarm.experiment.figures import BROKEN, FINISHED, INTERRUPTED, PENDING, RunStatus, read_figures, run_status
from gitswarm.experiment.spec import RunPlan, Spec, SpecError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from gitswarm.core.control import Control
    from gitswarm.core.events import Listener
    from gitswarm.engine.kernel import RunResult
    from gitswarm.experiment.remote import RemoteArms

JOURNAL = "experiment.json"

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
    plans: list[RunPlan] = field(default_factory=list)
    """Every run known: pass 1, then the equal-spend runs of each seed as its pass 1 ends."""
    fair: dict[int, EqualSpend] = field(default_factory=dict)
    """Under equal tokens, each seed's T, once every arm of it finished pass 1."""
    recorded: dict[str, dict] = field(default_factory=dict)
    """Each run's settings as experiment.json recorded them when the runner prepared."""
    _unpublished: bool = False

    def prepare(self) -> list[RunPlan]:
        """Check the runs already made against the spec, write experiment.json, and return the
        runs that are not finished, in the spec's order (pass 1, then the equal-spend runs of the
        seeds whose pass 1 is finished)."""
        folder = self.spec.folder
        folder.mkdir(parents=True, exist_ok=True)
        self.recorded = _recorded(folder / JOURNAL)
        self.plans, self.fair = list(self.spec.runs), {}
        for plan in self.plans:
            self._check_unchanged(plan)
        statuses = {plan.name: run_status(plan.config.run) for plan in self.plans}
        self.states = {plan.name: self._entry(plan, statuses[plan.name]) for plan in self.plans}
        todo = [p for p in self.plans if not statuses[p.name].finished]
        for seed in self.spec.seeds:
            todo += self.second_pass(seed)
        self._write()
        done = len(self.plans) - len(todo)
        self.say(f"experiment {self.spec.name}: {len(self.spec.runs)} runs ({len(self.spec.arms)} arms × "
                 f"{len(self.spec.seeds)} seeds){self._second_said()} in {folder}; {done} finished earlier, "
                 f"{len(todo)} to run, {self.parallel} at a time")
        return todo

    def _second_said(self) -> str:
        if not self.spec.budget.smallest:
            return ""
        again = len(self.plans) - len(self.spec.runs)
        known = f", and {again} equal-spend runs of the {len(self.fair)} seeds whose pass 1 is finished"
        later = "the equal-spend runs of each seed follow when its pass 1 finishes"
        if not self.fair:
            return f" in pass 1 ({later})"
        return known if len(self.fair) == len(self.spec.seeds) else f"{known} ({later})"

    async def run(self) -> dict[str, RunStatus]:
        """Every run not finished, `parallel` at a time; returns where each stands at the end."""
        todo = self.prepare()
        limiter = anyio.CapacityLimiter(self.parallel)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.grade_earlier, todo)
            for plan in todo:
                tg.start_soon(self._limited, plan, limiter, tg)
        return self.statuses()

    def statuses(self) -> dict[str, RunStatus]:
        return {plan.name: run_status(plan.config.run) for plan in self.plans}

    async def grade_earlier(self, todo: list[RunPlan]) -> None:
        """Grade the runs finished earlier (free where grades are stored: a run killed between
        its end and its grading gets them now)."""
        for plan in list(self.plans):
            if plan not in todo:
                await self._graded(plan)

    async def _limited(self, plan: RunPlan, limiter: anyio.CapacityLimiter, tg: TaskGroup) -> None:
        async with limiter:
            if self.control.stop.is_set():
                return
            await self.run_one(plan)
        for follower in self.after(plan):
            tg.start_soon(self._limited, follower, limiter, tg)

    def after(self, plan: RunPlan) -> list[RunPlan]:
        """The runs that `plan`'s end makes ready: its seed's equal-spend runs, when it was the
        last of the seed's pass 1 to finish (none otherwise)."""
        return self.second_pass(plan.seed) if plan.cap is None else []

    def second_pass(self, seed: int) -> list[RunPlan]:
        """Under equal tokens, once every arm of `seed` finished pass 1: T, and the equal-spend
        runs not finished (each once: none when the seed's T is known already)."""
        if not self.spec.budget.smallest or seed in self.fair:
            return []
        firsts = [p for p in self.spec.runs if p.seed == seed]
        fair = equal_spend(seed, [read_figures(p.arm, p.seed, p.config.run) for p in firsts])
        if fair is None:
            return []
        self._check_same_cap(fair)
        self.fair[seed] = fair
        again = self.spec.again(fair)
        for plan in again:
            self._check_unchanged(plan)
            self.states[plan.name] = self._entry(plan, run_status(plan.config.run))
        self.plans += again
        self._write()
        self.say(f"seed {seed}: T = {fair.tokens} tokens, the spend of {fair.smallest}'s run, which stands; "
                 + (f"equal-spend runs under a cap of T for {', '.join(fair.again)}" if fair.again
                    else "every arm spent T: no equal-spend run to make"))
        return [p for p in again if not run_status(p.config.run).finished]

    async def run_one(self, plan: RunPlan, listeners: list[Listener] | None = None) -> RunResult:
        """Run (or resume) one run to its end, then grade it."""
        self._update(plan, state="running")
        self.say(f"started  {_label(plan)}: {plan.config.run}")
        result = await self.start(plan, self.control, list(listeners or []))
        if result.reason.reason == StopReason.USER:
            self._update(plan, state=INTERRUPTED, reason=StopReason.USER.value)
            self.say(f"stopped  {_label(plan)} by the user: the same command resumes it")
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
        said += f" {_label(plan)}" + ("" if fresh else " (not run again)")
        self.say(f"{said}: {figures.reason} ({figures.detail}); solved {figures.solved} of {len(figures.scores)}, "
                 f"{figures.episodes} episodes, {figures.tokens} tokens")
        if figures.reason in BROKEN:
            self.say(f"  warning: {plan.name} ended by {figures.reason}: it measured the provider or gitswarm, not "
                     f"the arm; remove {plan.config.run} and run the experiment again to redo it")
        for message in ungraded:
            self.say(f"  {plan.name} left ungraded: {message}")

    def _entry(self, plan: RunPlan, status: RunStatus) -> dict:
        remote = {"url": self.spec.remote.url_of(plan.name)} if self.spec.remote is not None else {}
        return {"arm": plan.arm, "seed": plan.seed, "pass": 1 if plan.cap is None else 2, "cap": plan.cap,
                "path": str(plan.config.run), **remote, "state": status.state,
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
        runs = [{"name": name, **entry} for name, entry in self.states.items()]
        data: dict[str, object] = {
            "name": spec.name, "spec": str(spec.path), "problems": str(spec.problem_set.path),
            "baseline": spec.baseline, "budget": spec.budget.describe(), "seeds": list(spec.seeds),
            "arms": spec.arms, "runs": runs}
        if spec.budget.smallest:
            data["equal_spend"] = [self.fair[seed].as_dict() | {"standing": spec.standing(self.fair[seed])}
                                   if seed in self.fair else {"seed": seed, "tokens": None}
                                   for seed in spec.seeds]
        path = spec.folder / JOURNAL
        part = path.with_suffix(".json.part")
        part.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(part, path)
        if spec.remote is not None:
            self._publish(spec.remote, runs)

    def _publish(self, remote: RemoteArms, runs: list[dict]) -> None:
        """The list of runs for workers that follow the experiment (`experiment/remote.py`);
        a failed push is told once, and the experiment goes on."""
        ended = all(r["state"] == FINISHED for r in runs) and (
            not self.spec.budget.smallest or len(self.fair) == len(self.spec.seeds))
        failed = remote.publish(self.spec.folder, runs, ended)
        if failed and not self._unpublished:
            self.say(f"could not publish the list of runs to {remote.index_url()} (workers started "
                     f"with --experiment follow the last list pushed): {failed}")
        self._unpublished = bool(failed)

    def _check_unchanged(self, plan: RunPlan) -> None:
        """Refuse to resume a run under settings other than those it started with."""
        before = self.recorded.get(plan.name)
        if before is None or run_status(plan.config.run).state == PENDING:
            return
        now = self._settings(plan)
        changed = sorted(k for k in set(before) & set(now) - {"run"} if before[k] != now[k])
        if changed:
            shown = ", ".join(f"{k}: {before[k]!r} -> {now[k]!r}" for k in changed)
            raise SpecError(f"{self.spec.path}: the run {plan.name} in {self.spec.folder} started with other "
                            f"settings ({shown}); put the changed experiment in a new folder (--out), or "
                            f"remove {plan.config.run} to run it again")

    def _check_same_cap(self, fair: EqualSpend) -> None:
        """Refuse when a seed's pass 1 now gives another T than its equal-spend runs were made
        under (a pass-1 run removed and made again): they would no longer be equal."""
        firsts = [plan.config.run for plan in self.spec.runs if plan.seed == fair.seed]
        other = [run for first in firsts for run in _capped_runs(first) if run.name != f"{first.name}-at-{fair.tokens}"
                 and run_status(run).state != PENDING]
        if other:
            raise SpecError(f"{self.spec.path}: pass 1 of seed {fair.seed} now gives T = {fair.tokens} tokens (the "
                            f"spend of {fair.smallest}), but {', '.join(str(r) for r in other)} ran under another "
                            f"T: remove {'it' if len(other) == 1 else 'them'} to make the equal-spend runs again "
                            "under the new T, or put the experiment in a new folder (--out)")


def _capped_runs(first: Path) -> list[Path]:
    """The equal-spend runs of the pass-1 run at `first` found beside it, under any cap."""
    prefix = f"{first.name}-at-"
    found = first.parent.glob(f"{prefix}*") if first.parent.is_dir() else []
    return [p for p in found if p.name[len(prefix):].isdigit()]


def _label(plan: RunPlan) -> str:
    return f"{plan.arm} seed {plan.seed}" + (f" at {plan.cap} tokens" if plan.cap is not None else "")


def _recorded(path: Path) -> dict[str, dict]:
    """Each run's settings as experiment.json recorded them (none when it is missing or unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    runs = data.get("runs") if isinstance(data, dict) else None
    return {r["name"]: r["settings"] for r in runs if isinstance(r, dict) and isinstance(r.get("name"), str)
            and isinstance(r.get("settings"), dict)} if isinstance(runs, list) else {}

