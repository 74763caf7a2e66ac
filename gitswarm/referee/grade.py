"""Grade a problem's selected solution (or every candidate) and store the grades.

Graders, by problem kind:
- answer: the final answer is extracted (`answers.extract_answer`) and compared with the
  key (`answers.equivalent`): score 1 or 0. When the check cannot decide and a referee
  model is given, the model decides (method "llm", stored under that model); otherwise
  the grade is recorded as undecided (score None). A text with no final answer scores 0
  (method "no-answer") unless a referee model reads it.
- program: the hidden tests run against the candidate's files (`programs`): passed/total.
- reproduce: built by its compile.sh and run against the behavioural tests as ProgramBench
  grades (`reproduce`): passed/counted tests.
- proof: K judgments by the referee model (`proofs`): the median of 0/1/6/7 points.

A stored grade with a score is kept: grading again returns it unless `force` is given.
An ungraded entry (score None) is graded again. Blocking work runs in worker threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from gitswarm.domain.grade import Grade
from gitswarm.memory.repo import Memory
from gitswarm.problems.model import Kind, Problem
from gitswarm.referee import candidates, programs, proofs, reproduce
from gitswarm.referee.answer_judge import judge_answer
from gitswarm.referee.answers import Verdict, equivalent, extract_answer
from gitswarm.referee.candidates import CandidateContent
from gitswarm.referee.grades import GradeStore
from gitswarm.referee.verdicts import Model

ANSWER, TESTS, PROOF, REPRODUCE = "answer", "tests", "proof-judge", "reproduce"


class GradingError(Exception):
    """A problem cannot be graded as asked (no key, no tests, no referee model for proofs)."""


@dataclass(frozen=True)
class Judge:
    """The referee model and the name its grades are stored under."""

    model: Model
    name: str


@dataclass(frozen=True)
class Outcome:
    """What grading one candidate (or trying to) came to."""

    problem: str
    candidate: CandidateContent | None
    grade: Grade | None
    reused: bool = False
    """An earlier stored grade was kept (grading is idempotent)."""
    selected: bool = False
    """The candidate is the problem's selected solution."""
    note: str = ""


def judge_of(model: Model | None, name: str | None = None) -> Judge | None:
    """A Judge for `model`, named `name` or by its config's model string."""
    if model is None:
        return None
    config = getattr(model, "config", None)
    return Judge(model, name or getattr(config, "model", None) or type(model).__name__)


async def grade_problem(memory: Memory, problem: Problem, *, judge_model: Model | None = None,
                        judge_name: str | None = None, k: int = 3, force: bool = False,
                        all_candidates: bool = False, store: GradeStore | None = None,
                        compile_timeout: float = reproduce.COMPILE_TIMEOUT,
                        branch_timeout: float = reproduce.BRANCH_TIMEOUT) -> list[Outcome]:
    """Grade `problem`'s selected solution, or with `all_candidates` every candidate on main."""
    store = store or GradeStore(memory)
    judge = judge_of(judge_model, judge_name)
    chosen = candidates.selected(memory, problem.id, problem.kind)
    found = candidates.every(memory, problem.id, problem.kind) if all_candidates else []
    if chosen is None and not found:
        what = "no selected solution" if not all_candidates else "no candidate solution"
        return [Outcome(problem.id, None, None, note=f"{what} for {problem.id} yet")]
    if chosen is not None:
        found = [chosen] + [c for c in found if (c.commit, c.path) != (chosen.commit, chosen.path)]
    outcomes = []
    for candidate in found:
        outcome = await grade_candidate(store, problem, candidate, judge=judge, k=k, force=force,
                                        compile_timeout=compile_timeout, branch_timeout=branch_timeout)
        outcomes.append(Outcome(outcome.problem, candidate, outcome.grade, outcome.reused,
                                candidate is chosen, outcome.note))
    return outcomes


async def grade_candidate(store: GradeStore, problem: Problem, candidate: CandidateContent, *,
                          judge: Judge | None = None, k: int = 3, force: bool = False,
                          compile_timeout: float = reproduce.COMPILE_TIMEOUT,
                          branch_timeout: float = reproduce.BRANCH_TIMEOUT) -> Outcome:
    """Grade one candidate with the grader of the problem's kind."""
    if problem.kind == Kind.ANSWER:
        return await _answer(store, problem, candidate, judge, force)
    if problem.kind == Kind.PROGRAM:
        return await _program(store, problem, candidate, force)
    if problem.kind == Kind.REPRODUCE:
        return await _reproduce(store, problem, candidate, force, (compile_timeout, branch_timeout))
    return await _proof(store, problem, candidate, judge, k, force)


def _kept(store: GradeStore, c: CandidateContent, grader: str, model: str | None, force: bool) -> Outcome | None:
    found = store.get(c.problem, c.commit, grader, model)
    if found is None or not found.graded or force:
        return None
    return Outcome(c.problem, c, found, reused=True)


def _save(store: GradeStore, c: CandidateContent, grader: str, model: str | None, score: float | None,
          max_: float, details: dict, judgments: list[dict], force: bool) -> Outcome:
    previous = store.get(c.problem, c.commit, grader, model)
    grade = Grade(c.problem, c.commit, c.path, grader, model, score, max_, details, judgments)
    if previous is not None and (previous.score, previous.details, previous.judgments) == \
            (score, details, judgments):
        return Outcome(c.problem, c, previous, reused=True)  # the same verdict again: no new commit
    stored, written = store.put(grade, replace=force or (previous is not None and not previous.graded))
    return Outcome(c.problem, c, stored, reused=not written)


async def _answer(store: GradeStore, problem: Problem, c: CandidateContent, judge: Judge | None,
                  force: bool) -> Outcome:
    if not problem.answer:
        raise GradingError(f"{problem.id} has no answer key to grade against")
    kept = _kept(store, c, ANSWER, None, force) or (judge and _kept(store, c, ANSWER, judge.name, force))
    if kept:
        return kept
    answer = extract_answer(c.text)
    if answer is None:
        verdict = Verdict(None, "no-answer", "no final answer found (no \\boxed{} and no 'Answer:' line)")
    else:
        verdict = await anyio.to_thread.run_sync(equivalent, answer, problem.answer)
    details = {"method": verdict.method, "detail": verdict.detail, "extracted": answer}
    if verdict.equal is not None or judge is None:
        score = None if verdict.equal is None else float(verdict.equal)
        if answer is None:
            score = 0.0
        return _save(store, c, ANSWER, None, score, 1.0, details, [], force)
    judgment = await judge_answer(judge.model, problem, answer or c.text, problem.answer)
    score = None if judgment.verdict is None else float(judgment.verdict)
    details = {**details, "method": "llm", "symbolic": verdict.detail}
    return _save(store, c, ANSWER, judge.name, score, 1.0, details, [judgment.record()], force)


async def _program(store: GradeStore, problem: Problem, c: CandidateContent, force: bool) -> Outcome:
    if kept := _kept(store, c, TESTS, None, force):
        return kept
    if c.files is None:
        raise GradingError(f"the candidate {c.path} of {problem.id} has no program files")
    try:
        result = await anyio.to_thread.run_sync(programs.grade_program, problem, c.files)
    except programs.ProgramGradingError as exc:
        raise GradingError(str(exc)) from None
    failures = [{"test": o.name, "outcome": o.outcome, "message": o.message}
                for o in result.outcomes if o.outcome != "passed"][:20]
    details = {"passed": result.passed, "total": result.total, "resolved": result.resolved,
               "exit_code": result.exit_code, "timed_out": result.timed_out,
               "isolation": result.isolation, "seconds": result.duration_seconds,
               "failures": failures, "output": result.output[-2000:]}
    return _save(store, c, TESTS, None, result.score, 1.0, details, [], force)


async def _reproduce(store: GradeStore, problem: Problem, c: CandidateContent, force: bool,
                     timeouts: tuple[float, float]) -> Outcome:
    if kept := _kept(store, c, REPRODUCE, None, force):
        return kept
    files = c.files
    if files is None:
        raise GradingError(f"the candidate {c.path} of {problem.id} has no program files")
    try:
        result = await anyio.to_thread.run_sync(
            lambda: reproduce.grade_reproduce(problem, files, compile_timeout=timeouts[0],
                                              branch_timeout=timeouts[1]))
    except reproduce.ReproduceGradingError as exc:
        raise GradingError(str(exc)) from None
    return _save(store, c, REPRODUCE, None, result.score, 1.0, reproduce.details(result), [], force)


async def _proof(store: GradeStore, problem: Problem, c: CandidateContent, judge: Judge | None, k: int,
                 force: bool) -> Outcome:
    if judge is None:
        stored = [g for g in store.for_candidate(c.problem, c.commit) if g.grader == PROOF and g.graded]
        if stored and not force:  # shown as it was stored, under the model that judged it
            return Outcome(c.problem, c, max(stored, key=lambda g: (g.time, g.key)), reused=True)
        raise GradingError(f"{problem.id} is a proof problem: grading it needs a referee model "
                           "(--referee-model, or GITSWARM_REFEREE_MODEL)")
    if kept := _kept(store, c, PROOF, judge.name, force):
        return kept
    result = await proofs.judge_proof(judge.model, problem, c.text, k)
    details = {"k": k, "points": result.points, "spread": result.spread, "ungraded": result.ungraded,
               "median": "lower median of the judgments with a verdict"}
    judgments = [j.record() for j in result.judgments]
    return _save(store, c, PROOF, judge.name, result.score, float(proofs.MAX_POINTS), details,
                 judgments, force)
