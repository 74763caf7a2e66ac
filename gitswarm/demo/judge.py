"""The demo's scripted proof judge: it knows the texts `script.yaml` has its workers write, and
nothing else. It gives 7 points to a proof that is the script's correct attempt, 0 to the
script's flawed first try (quoting the error its review found), and no verdict to any other
text, so a demo grade is never mistaken for a real referee's: grades are stored under the
model name `JUDGE_MODEL`, and `gitswarm demo` says so when it prints them."""

from __future__ import annotations

import re

from gitswarm.demo.script import script

JUDGE_MODEL = "openai/gitswarm-scripted-judge"
REFEREE = "You are an expert grader of olympiad mathematics"
"""How the proof referee's system prompt begins: what marks a request as the judge's."""
PROOF = re.compile(r"===== BEGIN CANDIDATE PROOF =====\n(.*?)\n===== END CANDIDATE PROOF =====", re.DOTALL)


def is_judge_request(system: str) -> bool:
    return system.startswith(REFEREE)


def judge(prompt: str) -> str:
    """The scripted judgment of the proof fenced in `prompt`, ending `<points>N</points>`."""
    found = PROOF.search(prompt)
    proof = _words(found.group(1)) if found else ""
    for text in script().values():
        if "attempt" in text and proof == _words(text["attempt"]):
            return ("Scripted judge: this is the demo script's complete proof; every step matches the "
                    "reference route.\n<points>7</points>")
        if "flawed" in text and proof == _words(text["flawed"]):
            return ("Scripted judge: this is the demo script's flawed first try; the step \"the next odd "
                    "number is 2n - 1\" is false, so the main line fails.\n<points>0</points>")
    return "Scripted judge: this text is not one the demo script wrote, so it gives no verdict."


def _words(text: str) -> str:
    return " ".join(text.split())
