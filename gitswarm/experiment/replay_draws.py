"""Run a replay's draws that are not finished, `parallel` at a time on one event loop, and
grade what each draw's episode wrote. A draw whose run finished earlier is not run again (its
grades are stored in its run, so reading them again is free); one cut mid-way is resumed by
the engine itself. Counted for each draw: whether its episode wrote a candidate (an attempt
file, or a program's `code/<slug>` folder) and whether the referee graded one correct (full
marks), never the candidates it inherited from the start state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import anyio

from gitswarm.core.stops import StopReason
from gitswarm.domain.kinds import candidate_path
from gitswarm.experiment.figures import FINISHED, SOLVED, run_status
from gitswarm.experiment.replay import Target
from gitswarm.experiment.replay_arms import Draw, prepare
from gitswarm.experiment.runner import BROKEN

if TYPE_CHECKING:
    from gitswarm.core.control import Control
    from gitswarm.engine.kernel import RunResult
    from gitswarm.memory.repo import Memory
    from gitswarm.problems.model import Problem
    from gitswarm.referee.verdicts import Model

Start = Callable[[Draw], Awaitable["RunResult"]]
"""Runs (or resumes) one draw's run to its end."""


@dataclass(frozen=True)
class DrawResult:
    """Where one draw stands, and what its episode came to."""

    arm: str
    number: int
    path: str
    state: str
    reason: str | None = None
    episodes: int = 0
    candidates: list[str] = field(default_factory=list)
    """The candidates its episode wrote (paths in its problem folder)."""
    scores: list[float | None] = field(default_factory=list)
    """Each candidate's grade as score / max; None where it stayed ungraded."""
    ungraded: list[str] = field(default_factory=list)
    """Why a candidate stayed ungraded."""
    did: list[str] = field(default_factory=list)
    """What each of its episodes did (`action_of`): attempt, code, revision, review, note, ...,
    or how it ended without a commit (abstain, failed, stopped)."""

    @property
    def finished(self) -> bool:
        return self.state == FINISHED

    @property
    def accepted(self) -> bool:
        """A candidate of its episode graded correct (full marks)."""
        return any(s is not None and s >= SOLVED for s in self.scores)

    def as_dict(self) -> dict:
        return asdict(self) | {"accepted": self.accepted}


@dataclass
class Replayer:
    """Runs a replay's missing draws and grades them; `say` gets a line per draw."""

    target: Target
    draws: list[Draw]
    start: Start
    judge: Model | None
    """The referee model (proofs, and answers the symbolic check cannot decide), or None."""
    say: Callable[[str], None]
    control: Control
    parallel: int = 1

    async def run(self) -> list[DrawResult]:
        """Every draw not finished, `parallel` at a time; the results in the draws' order."""
        limiter = anyio.CapacityLimiter(self.parallel)
        results: dict[tuple[str, int], DrawResult] = {}

        async def one(draw: Draw) -> None:
            async with limiter:
                results[draw.arm, draw.number] = await self._one(draw)

        async with anyio.create_task_group() as tg:
            for draw in self.draws:
                tg.start_soon(one, draw)
        return [results[d.arm, d.number] for d in self.draws]

    async def _one(self, draw: Draw) -> DrawResult:
        if run_status(draw.path).finished:
            result = await self.outcome(draw)
            self.say(f"earlier  {draw.name} (not run again): {_said(result)}")
            return result
        if self.control.stop.is_set():
            return DrawResult(draw.arm, draw.number, str(draw.path), run_status(draw.path).state)
        await anyio.to_thread.run_sync(prepare, self.target, draw)
        self.say(f"started  {draw.name}: {draw.path}")
        ended = await self.start(draw)
        if ended.reason.reason == StopReason.USER:
            self.say(f"stopped  {draw.name} by the user: the same command resumes it")
            return DrawResult(draw.arm, draw.number, str(draw.path), run_status(draw.path).state)
        result = await self.outcome(draw)
        self.say(f"finished {draw.name}: {_said(result)}")
        if result.reason in BROKEN:
            self.say(f"  warning: {draw.path} ended by {result.reason}: it measured the provider or gitswarm, not "
                     f"the memory; remove {draw.path} and run the replay again to redo it")
        return result

    async def outcome(self, draw: Draw) -> DrawResult:
        """The finished draw's episodes and the grades of the candidates they wrote (graded now
        when not stored yet)."""
        from gitswarm.engine.ledger import Ledger
        from gitswarm.memory.repo import Memory
        from gitswarm.referee.grades import GradeStore

        status = run_status(draw.path)
        memory = Memory(draw.path)
        records = [r for key, r in Ledger.load(memory).episodes.items() if key != "merger"]
        store = GradeStore(memory)
        paths: list[str] = []
        scores: list[float | None] = []
        ungraded: list[str] = []
        did: list[str] = []
        for record in sorted(records, key=lambda r: r.episode):
            commit = memory.op_commit(f"{record.episode}-final")
            did.append(action_of(memory, commit, record.status))
            if not commit:
                continue
            for path in written(memory, commit, self.target.problem):
                paths.append(path)
                score, why = await self._grade(memory, store, commit, path)
                scores.append(score)
                ungraded += [why] if why else []
        return DrawResult(draw.arm, draw.number, str(draw.path), status.state, status.reason, len(records),
                          paths, scores, ungraded, did)

    async def _grade(self, memory: Memory, store, commit: str, path: str) -> tuple[float | None, str]:
        """One candidate's score / max, or None and why it stayed ungraded."""
        from gitswarm.models.errors import ModelError
        from gitswarm.referee.candidates import CandidateError, load
        from gitswarm.referee.grade import GradingError, grade_candidate, judge_of
        from gitswarm.sandbox import SandboxError

        problem = self.target.problem
        try:
            candidate = load(memory, problem.id, problem.kind, commit, f"problems/{problem.id}/{path}")
            graded = await grade_candidate(store, problem, candidate, judge=judge_of(self.judge))
        except (GradingError, CandidateError, SandboxError) as exc:
            return None, f"{path} in {memory.path}: {exc}"
        except ModelError as exc:
            return None, f"{path} in {memory.path}: the referee model failed: {exc}"
        grade = graded.grade
        if grade is None or grade.score is None:
            return None, f"{path} in {memory.path}: the referee could not decide ({graded.note or 'undecided'})"
        return (grade.score / grade.max if grade.max else 0.0), ""


def action_of(memory: Memory, commit: str | None, status: str) -> str:
    """What an episode did: its final commit's kind (an attempt or code that revises another
    counts as a revision, as its title says), or without one how it ended."""
    if commit is None:
        return status
    info = memory.commit(commit)
    if info.kind in ("attempt", "code") and "revises " in info.subject:
        return "revision"
    return info.kind or status


def written(memory: Memory, commit: str, problem: Problem) -> list[str]:
    """The candidates `commit` added or changed in `problems/<problem>/`, in path order: attempt
    files, or for a program problem `code/<slug>` folders (as the referee grades them)."""
    from gitswarm.referee.candidates import CODE_KINDS

    prefix = f"problems/{problem.id}/"
    folder = "code/" if problem.kind in CODE_KINDS else "attempts/"
    return sorted({candidate_path(path.removeprefix(prefix)) for path in memory.reader().written(commit)
                   if path.startswith(prefix + folder)})


def _said(result: DrawResult) -> str:
    if not result.candidates:
        verdict = "no attempt"
    elif result.accepted:
        verdict = f"accepted ({', '.join(result.candidates)})"
    elif any(s is None for s in result.scores):
        verdict = f"not accepted, some ungraded ({'; '.join(result.ungraded)})"
    else:
        verdict = f"not accepted ({', '.join(result.candidates)})"
    return f"{result.reason}, {result.episodes} episode(s), {verdict}"
