"""Grade a proof with an LLM judge, in the manner of IMO-ProofBench's grader.

The judge sees the problem, the reference solution and the grading guidelines when the
problem has them (they override the general rubric), and the candidate proof, fenced as
data. It awards 7, 6, 1 or 0 and ends with `<points>N</points>`. K independent judgments
are made; the reported score is their median (the lower median when an even number of
judgments gave a verdict, so the score stays on the 0/1/6/7 scale and errs low), with the
spread and every judge's reasoning kept. A judgment without a usable verdict (malformed
twice, or a model error) is left out of the median; with no verdict at all the proof is
ungraded (score None), never 0 or 7.

The K judgments send the same conversation, so the first runs alone and the others start
once it has answered: by then the provider has cached the shared prefix (Anthropic caches
what the request marks, OpenAI-style providers a stable prefix by themselves), and K-1 of
the K requests read it instead of paying for it again.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

import anyio

from gitswarm.problems.model import Problem
from gitswarm.referee.verdicts import Judgment, Model, ask
from gitswarm.resources import render

MAX_POINTS = 7
ALLOWED_POINTS = (0, 1, 6, 7)
_POINTS = re.compile(r"<points>\s*(\d+)\s*(?:(?:/|out\s+of)\s*7\s*)?</points>", re.IGNORECASE)
EXPECTED = "<points>N</points> with N one of 0, 1, 6, 7"


def parse_points(text: str) -> int | None:
    """The points of the last `<points>N</points>` in `text`, if N is 0, 1, 6 or 7."""
    found = _POINTS.findall(text or "")
    if not found:
        return None
    points = int(found[-1])
    return points if points in ALLOWED_POINTS else None


@dataclass(frozen=True)
class ProofGrade:
    """K judgments of one proof and the score they give."""

    judgments: list[Judgment] = field(default_factory=list)

    @property
    def points(self) -> list[int]:
        """The verdicts of the judgments that gave one, in order."""
        return [j.verdict for j in self.judgments if j.verdict is not None]

    @property
    def score(self) -> int | None:
        """The (lower) median of the verdicts; None when no judgment gave one."""
        return statistics.median_low(self.points) if self.points else None

    @property
    def spread(self) -> int | None:
        """Highest minus lowest verdict: how much the judges disagreed."""
        return max(self.points) - min(self.points) if self.points else None

    @property
    def ungraded(self) -> int:
        """Judgments without a verdict."""
        return len(self.judgments) - len(self.points)


def messages(problem: Problem, proof: str) -> list[dict]:
    """The judge's conversation: rules and rubric, then the problem and the fenced proof."""
    system = render("proof_referee_system.md.j2", has_guidelines=bool(problem.grading))
    user = render("proof_referee.md.j2", statement=problem.statement.strip(),
                  solution=(problem.solution or "").strip(), guidelines=(problem.grading or "").strip(),
                  proof=proof.strip())
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def judge_proof(model: Model, problem: Problem, proof: str, k: int = 3) -> ProofGrade:
    """Make `k` independent judgments of `proof`, the first alone, then the others
    concurrently; see the module docstring."""
    if k < 1:
        raise ValueError("the number of judgments must be at least 1")
    conversation = messages(problem, proof)
    results: list[Judgment | Exception | None] = [None] * k

    async def one(index: int) -> None:
        try:
            results[index] = await ask(model, conversation, parse_points, EXPECTED)
        except Exception as exc:  # re-raised below as itself, not wrapped in an ExceptionGroup
            results[index] = exc

    await one(0)  # writes the provider's prompt cache that the others read
    async with anyio.create_task_group() as group:
        for index in range(1, k):
            group.start_soon(one, index)
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise failed[0]
    return ProofGrade([j for j in results if isinstance(j, Judgment)])
