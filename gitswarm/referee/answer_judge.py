"""Ask the referee model whether an answer equals the key, when the symbolic check cannot tell.

The model ends with `<equivalent>yes</equivalent>` or `<equivalent>no</equivalent>`; the
last such line counts. A malformed reply is corrected once (see `verdicts.ask`), then the
answer stays undecided.
"""

from __future__ import annotations

import re

from gitswarm.problems.model import Problem
from gitswarm.referee.verdicts import Judgment, Model, ask
from gitswarm.resources import render

_VERDICT = re.compile(r"<equivalent>\s*(yes|no)\s*</equivalent>", re.IGNORECASE)
EXPECTED = "<equivalent>yes</equivalent> or <equivalent>no</equivalent>"
MAX_CANDIDATE_CHARS = 6_000


def parse_equivalent(text: str) -> bool | None:
    """True for a final `yes`, False for `no`, None when there is no verdict."""
    found = _VERDICT.findall(text or "")
    return found[-1].lower() == "yes" if found else None


async def judge_answer(model: Model, problem: Problem, candidate: str, key: str) -> Judgment:
    """One judgment of `candidate` (an answer, or a solution's tail) against `key`."""
    shown = candidate if len(candidate) <= MAX_CANDIDATE_CHARS else "…" + candidate[-MAX_CANDIDATE_CHARS:]
    prompt = render("answer_equivalence.md.j2", statement=problem.statement.strip(), key=key,
                    candidate=shown.strip())
    return await ask(model, [{"role": "user", "content": prompt}], parse_equivalent, EXPECTED)
