"""Ask a referee model for a verdict in a fixed form; one correction, then "no verdict".

A reply whose verdict cannot be parsed is answered once with a corrective message (the
conversation so far plus `prompts/referee_corrective.md.j2`); a second unusable reply, or a
model error, ends the judgment without a verdict; a failure of the setup (auth, unknown
model, quota) raises ModelError. Nothing is ever guessed from a malformed reply, so a
broken judge yields "ungraded", never a score by accident.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

from gitswarm.resources import render

T = TypeVar("T")
FATAL = frozenset({"auth", "permission", "not_found", "quota"})
"""Model failures that no judgment can survive: they end the grading (a setup problem)."""


class Model(Protocol):
    """What the referee needs of a model (gitswarm.models.client.LiteLLMModel in production)."""

    async def complete(self, messages: list[dict], tools: list[dict] | None = None) -> Any: ...


@dataclass
class Judgment:
    """One independent judgment: the verdict (None when there is none) and every reply."""

    verdict: Any = None
    replies: list[str] = field(default_factory=list)
    """The judge's replies, its reasoning included, in order (two when it was corrected)."""
    error: str = ""
    """Why there is no verdict: a malformed reply twice, or the model failed."""
    tokens_in: int = 0
    tokens_out: int = 0

    def record(self) -> dict:
        """The judgment as stored with the grade."""
        return asdict(self)


async def ask(model: Model, messages: list[dict], parse: Callable[[str], T | None],
              expected: str) -> Judgment:
    """Get one verdict; `parse` returns None for a malformed reply, `expected` names the form."""
    from gitswarm.models.errors import ModelError

    judgment = Judgment()
    conversation = list(messages)
    for attempt in range(2):
        try:
            reply = await model.complete(conversation)
        except ModelError as exc:
            if exc.kind in FATAL:
                raise
            judgment.error = f"the model failed: {exc}"
            return judgment
        text = reply.content or ""
        judgment.replies.append(text)
        _count(judgment, reply)
        judgment.verdict = parse(text)
        if judgment.verdict is not None:
            return judgment
        if attempt == 0:
            correction = render("referee_corrective.md.j2", expected=expected,
                                problem="it does not end with the verdict in the required form")
            conversation += [{"role": "assistant", "content": text},
                             {"role": "user", "content": correction}]
    judgment.error = f"no verdict in the expected form ({expected}) after one correction"
    return judgment


def _count(judgment: Judgment, reply: Any) -> None:
    usage = getattr(reply, "usage", None)
    judgment.tokens_in += int(getattr(usage, "tokens_in", 0) or 0)
    judgment.tokens_out += int(getattr(usage, "tokens_out", 0) or 0)
