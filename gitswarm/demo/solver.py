"""The scripted solver: a test double of a model that "solves" answer problems by chance, so
that `gitswarm experiment` can be tried end to end without an API key. A simulator, never
evidence about real models: it knows the answers because it is handed the hidden keys
(`Solver(answers=...)`), which the engine never does.

On an answer problem it writes an attempt that is correct with chance `p`, else a wrong one;
the chance rises to `p + boost × (1 − p)` when the memory overview it was shown lists an
earlier correct attempt or note, so a swarm (which sees the memory) and independent sampling
(which does not) can differ. It reviews and nominates where the state header asks for it,
as the demo's scripted model does (`demo.brain`), judging an attempt rightly with chance
`check`. Every draw is seeded by (seed, problem, episode, what is drawn), so a request gets
the same answer every time for a given seed. Other problem kinds, the merger and the judge
are answered by `demo.brain.respond`.
"""

from __future__ import annotations

import hashlib
import random
import re

from pydantic import BaseModel, Field

from gitswarm.demo.brain import (
    ASSIGNED,
    NOMINATE,
    NOT_REQUIRED,
    REVIEW,
    REVISE,
    STATE,
    TEXT_CALLS,
    respond,
    text_of,
    tool_call,
)
from gitswarm.fakeserver import FakeReply
from gitswarm.models import textproto

SOLVER_MODEL = "scripted-solver"
"""What an experiment spec names as its model to be served by the solver."""
ROW = re.compile(r"^\| ((?:notes|lemmas|attempts|reviews|code)/\S+) \| [0-9a-f]{7,40} \| [^|\n]* \| [^|\n]* "
                 r"\| [^|\n]* \| (.*) \|$", re.MULTILINE)
"""A row of the overview's item table: the path, and the first line of the item."""
DIGEST = re.compile(r"\b([0-9a-f]{8}): the answer is")
"""How an attempt's first line names its answer (a digest of it: an overview line is cut at 80 characters)."""
ANSWER = re.compile(r"^Answer: (.+)$", re.MULTILINE)


class SolverSettings(BaseModel):
    """The solver's chances: an experiment spec's `[scripted]` table."""

    model_config = {"frozen": True, "extra": "forbid"}

    p: float = Field(0.3, ge=0, le=1)
    """Chance that an attempt is correct when the memory shown holds no correct attempt or note."""
    boost: float = Field(0.5, ge=0, le=1)
    """With a correct attempt or note in the memory shown, the chance is p + boost × (1 − p)."""
    check: float = Field(0.9, ge=0, le=1)
    """Chance that a review, or the check before a nomination under plain plurality, judges an
    attempt rightly."""


def digest(answer: str) -> str:
    """The short name of an answer that an attempt's first line carries."""
    return hashlib.sha256(answer.strip().encode()).hexdigest()[:8]


def wrong(key: str, shift: int) -> str:
    """A wrong answer: the key's last digit moved by `shift` (1 to 9), or the digit itself
    when the key has none."""
    digits = [i for i, c in enumerate(key) if c.isdigit()]
    if not digits:
        return str(shift)
    i = digits[-1]
    return f"{key[:i]}{(int(key[i]) + shift) % 10}{key[i + 1:]}"


class Solver:
    """A responder for the fake server (`gitswarm.fakeserver.serve`) that plays a model of
    success rate `settings.p` on the answer problems whose keys it is given."""

    def __init__(self, answers: dict[str, str], settings: SolverSettings | None = None, seed: int = 0) -> None:
        self.answers = {pid: key.strip() for pid, key in answers.items()}
        self.settings = settings or SolverSettings()
        self.seed = seed

    def __call__(self, request: dict) -> FakeReply:
        messages = request.get("messages", [])
        texts = [text_of(m) for m in messages]
        first = next((t for m, t in zip(messages, texts, strict=True) if m["role"] == "user" and STATE.search(t)), "")
        state = STATE.search(first)
        if state is None or state.group(2) != "answer" or state.group(1) not in self.answers:
            return respond(request)  # the merger, the judge, other kinds: the demo's scripted model
        problem, _, episode = state.groups()
        later = "\n".join(t for m, t in zip(messages, texts, strict=True)
                          if m["role"] in ("tool", "user") and t != first)
        plan = self._plan(problem, episode, first, later)
        call = plan[min(sum(m["role"] == "assistant" for m in messages), len(plan) - 1)]
        if texts and TEXT_CALLS in texts[0]:
            return FakeReply(content=textproto.format_calls([(call["name"], call["arguments"])]))
        return FakeReply(tool_calls=[call])

    def _plan(self, problem: str, episode: str, prompt: str, later: str) -> list[dict]:
        """This episode's calls, one per step: what the header advises, else a nomination of
        what it believes correct (plain plurality), else a new attempt or, when a shown attempt
        seems right and waits for others' reviews, an abstention."""
        key = self.answers[problem]
        shown = ROW.findall(prompt)
        attempts = [(path, found.group(1)) for path, title in shown if path.startswith("attempts/")
                    and (found := DIGEST.search(title))]
        plurality = NOT_REQUIRED in prompt
        if advised := NOMINATE.search(prompt):
            return _nominate(advised.group(1))
        if not plurality and (advised := ASSIGNED.search(prompt) or REVIEW.search(prompt)):
            return self._review(problem, episode, advised.group(1), later)
        if advised := REVISE.search(prompt):
            return self._attempt(problem, episode, shown, [advised.group(2), advised.group(1)])
        believed = [path for path, name in attempts if self._believes(problem, episode, path, name == digest(key))]
        if plurality and believed:
            return _nominate(believed[-1])
        if believed:
            return [tool_call("abstain", reason="an attempt that looks right waits for other workers' reviews")]
        return self._attempt(problem, episode, shown, [])

    def _chance(self, *drawn: str) -> float:
        return random.Random("|".join((str(self.seed), *drawn))).random()

    def _believes(self, problem: str, episode: str, path: str, correct: bool) -> bool:
        """Whether a check of the attempt at `path` finds it correct: rightly with chance `check`."""
        right = self._chance(problem, episode, "check", path) < self.settings.check
        return correct if right else not correct

    def _attempt(self, problem: str, episode: str, shown: list[tuple[str, str]], cites: list[str]) -> list[dict]:
        key, s = self.answers[problem], self.settings
        helped = any(digest(key) in title for path, title in shown if path.startswith(("attempts/", "notes/")))
        chance = s.p + s.boost * (1 - s.p) if helped else s.p
        correct = self._chance(problem, episode, "attempt") < chance
        answer = key if correct else wrong(key, 1 + int(self._chance(problem, episode, "wrong") * 9))
        body = (f"# Attempt {digest(answer)}: the answer is {answer}\n\nScripted solver: a simulated attempt "
                f"(a seeded draw, chance {chance:.2f}), not a real model's reasoning.\n\nAnswer: {answer}\n")
        path = f"attempts/attempt-{episode}.md"
        return [tool_call("write_file", path=path, content=body),
                tool_call("contribute", kind="attempt", title=f"the answer is {answer}"[:100],
                      summary="A simulated attempt.", informed_by=cites, self_assessment="complete")]

    def _review(self, problem: str, episode: str, target: str, later: str) -> list[dict]:
        """Read `target`, then review it: pass when the check finds its answer right, else critical."""
        found = ANSWER.findall(later)
        if found:
            right = self._believes(problem, episode, target, found[-1].strip() == self.answers[problem])
            verdict = "pass" if right else "critical"
        else:
            verdict = "gaps"  # the attempt could not be read: no finding either way
        return [tool_call("read_file", path=target),
                tool_call("write_file", path=f"reviews/review-{episode}.md",
                      content=f"# Review of {target}\n\nScripted solver's check of the final answer. "
                              f"Verdict: {verdict}.\n"),
                tool_call("contribute", kind="review", title=f"review of {target}", summary="Checked the answer.",
                      reviews=target, verdict=verdict, self_assessment="complete")]


def _nominate(candidate: str) -> list[dict]:
    return [tool_call("read_file", path=candidate),
            tool_call("nominate", candidate=candidate, rationale="Checked: its final answer is right.")]

