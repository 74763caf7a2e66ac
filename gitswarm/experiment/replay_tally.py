"""A replay's two arms compared: per arm the episodes, what they did, the attempts and the
accepted ones; the difference in rate with Fisher's exact test (exact at any number of
episodes, the arms' episodes being independent draws) deciding whether it is within the noise,
and the difference's percentile-bootstrap interval over the draws paired by number
(`stats.py`). Like is compared with like: beside the overall rate, the rate among the episodes
that wrote a candidate, and whether the arms differ in what their episodes chose to do, so
that a change of next action is not read as a change of quality."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

from gitswarm.experiment.replay_arms import ARMS, WITH, WITHOUT
from gitswarm.experiment.replay_draws import DrawResult
from gitswarm.experiment.stats import LEVEL, bootstrap_ci

SMALL = 20
"""Below this many episodes an arm, the sentence says that only a large difference can show."""
ALPHA = 1 - LEVEL


@dataclass(frozen=True)
class ArmTally:
    """One arm's finished draws, counted."""

    arm: str
    episodes: int
    attempts: int
    """Episodes that wrote a candidate (an attempt, or a program)."""
    accepted: int
    """Episodes with a candidate the referee graded correct."""
    ungraded: int
    """Episodes with a candidate the referee could not grade and none accepted."""
    unfinished: int
    """Draws not run yet, or cut before their end (the same command resumes them)."""
    did: dict[str, int] = field(default_factory=dict)
    """Its episodes by what they did (attempt, review, abstain, ...), most first."""

    @property
    def rate(self) -> float | None:
        return self.accepted / self.episodes if self.episodes else None

    @property
    def rate_of_attempts(self) -> float | None:
        """Accepted among the episodes that wrote a candidate: the quality of what was tried."""
        return self.accepted / self.attempts if self.attempts else None

    def as_dict(self) -> dict:
        return asdict(self) | {"rate": self.rate, "rate_of_attempts": self.rate_of_attempts}


def tally(results: list[DrawResult]) -> dict[str, ArmTally]:
    """Each arm's counts over its finished draws."""
    counted = {}
    for arm in ARMS:
        mine = [r for r in results if r.arm == arm]
        done = [r for r in mine if r.finished]
        counted[arm] = ArmTally(arm, sum(r.episodes for r in done), sum(bool(r.candidates) for r in done),
                                sum(r.accepted for r in done),
                                sum(not r.accepted and any(s is None for s in r.scores) for r in done),
                                len(mine) - len(done), dict(Counter(a for r in done for a in r.did).most_common()))
    return counted


def fisher_exact(a: int, n1: int, c: int, n2: int) -> float:
    """Two-sided p of Fisher's exact test: `a` successes of `n1` against `c` of `n2`; the
    tables with the same margins no likelier than the one observed."""
    total, successes = n1 + n2, a + c
    if n1 == 0 or n2 == 0:
        return 1.0
    whole = math.comb(total, n1)

    def chance(x: int) -> float:
        return math.comb(successes, x) * math.comb(total - successes, n1 - x) / whole

    seen = chance(a)
    low, high = max(0, successes - n2), min(successes, n1)
    return min(1.0, sum(p for x in range(low, high + 1) if (p := chance(x)) <= seen * (1 + 1e-7)))


def compare(counted: dict[str, ArmTally], results: list[DrawResult], candidate: str,
            simulated: bool = False) -> dict:
    """The arms' difference in rate, whether it is within the noise, and the sentence."""
    mine, theirs = counted[WITH], counted[WITHOUT]
    paired = {(r.arm, r.number): r for r in results if r.finished and r.episodes}
    numbers = sorted(n for arm, n in paired if arm == WITH and (WITHOUT, n) in paired)
    diffs = [float(paired[WITH, n].accepted) - float(paired[WITHOUT, n].accepted) for n in numbers]
    low, high = bootstrap_ci(diffs) if diffs else (None, None)
    mine_rate, their_rate = mine.rate, theirs.rate
    if mine_rate is None or their_rate is None:  # an arm with no finished episode
        return {"difference": None, "ci95": None, "pairs": len(diffs), "fisher_p": None, "within_noise": True,
                "sentence": f"Nothing to compare yet: an arm has no finished episode; {_resume()}"}
    difference = mine_rate - their_rate
    p = fisher_exact(mine.accepted, mine.episodes, theirs.accepted, theirs.episodes)
    within = p >= ALPHA
    return {"difference": difference, "ci95": [low, high] if diffs else None, "pairs": len(diffs), "fisher_p": p,
            "within_noise": within, "sentence": _sentence(mine, theirs, difference, candidate, p, within, (low, high),
                                                          len(diffs), simulated)}


def _sentence(mine: ArmTally, theirs: ArmTally, difference: float, candidate: str, p: float, within: bool,
              interval: tuple[float | None, float | None], pairs: int, simulated: bool) -> str:
    """`difference`: the arms' difference in rate, both arms having finished episodes."""
    short = candidate[:10]
    text = (f"With the memory {short} cited, {mine.accepted} of {mine.episodes} episodes reached an accepted "
            f"solution ({mine.rate:.0%}); without it, {theirs.accepted} of {theirs.episodes} ({theirs.rate:.0%}): "
            f"a difference of {difference:+.2f}")
    if pairs and interval[0] is not None:
        text += (f" (percentile-bootstrap {LEVEL:.0%} interval [{interval[0]:+.2f}, {interval[1]:+.2f}] over "
                 f"{pairs} paired draw{'s' if pairs != 1 else ''})")
    if within:
        text += (f"; Fisher's exact test gives p = {p:.3f}: the difference is within the noise, so this replay "
                 f"does not show that the memory {short} cited caused its result.")
    else:
        text += (f"; Fisher's exact test gives p = {p:.3f} < {ALPHA:.2f}: the difference is unlikely to be noise, "
                 f"so removing the memory {short} cited changed how often an episode from its start state "
                 "reached an accepted solution.")
    text += _like_with_like(mine, theirs, short)
    if min(mine.episodes, theirs.episodes) < SMALL:
        text += (f" With {min(mine.episodes, theirs.episodes)} episodes an arm only a large difference can show "
                 "(the interval is rough at this size); run more with --episodes.")
    if simulated:
        text += " The scripted solver is a simulator: these figures are not evidence about real models."
    if mine.unfinished or theirs.unfinished:
        text += f" {mine.unfinished + theirs.unfinished} draw(s) are not finished: {_resume()}"
    return text


def _like_with_like(mine: ArmTally, theirs: ArmTally, short: str) -> str:
    """What the test measured, and the comparison of what each arm's episodes did."""
    text = (" The test compares how often an episode reached an accepted solution, whatever it chose to do"
            f" (with {short} cited: {_did(mine)}; without: {_did(theirs)}).")
    if mine.attempts and theirs.attempts:
        text += (f" Among the episodes that wrote a candidate, {mine.accepted} of {mine.attempts} were accepted "
                 f"({mine.rate_of_attempts:.0%}) with it and {theirs.accepted} of {theirs.attempts} "
                 f"({theirs.rate_of_attempts:.0%}) without.")
    else:
        text += (f" No episode {'without' if not theirs.attempts else 'with'} it wrote a candidate, so the quality "
                 "of the arms' attempts cannot be compared.")
    if fisher_exact(mine.attempts, mine.episodes, theirs.attempts, theirs.episodes) < ALPHA:
        text += (f" The arms differ in what their episodes chose to do ({mine.attempts} of {mine.episodes} wrote a "
                 f"candidate with it, {theirs.attempts} of {theirs.episodes} without): the difference in rate may "
                 "be a change of next action rather than of the attempts' quality.")
    return text


def _did(arm: ArmTally) -> str:
    return ", ".join(f"{n} {what}" for what, n in arm.did.items()) or "nothing recorded"


def _resume() -> str:
    return "run the same command to run what is missing."


def table(counted: dict[str, ArmTally]) -> str:
    """arm, episodes, attempts, accepted, rate, the rate among attempts, what the episodes did:
    one row per arm."""
    rows = [("ARM", "EPISODES", "ATTEMPTS", "ACCEPTED", "RATE", "OF ATTEMPTS", "DID")]
    for t in counted.values():
        rows.append((t.arm, str(t.episodes), str(t.attempts), str(t.accepted),
                     "-" if t.rate is None else f"{t.rate:.2f}",
                     "-" if t.rate_of_attempts is None else f"{t.rate_of_attempts:.2f}", _did(t)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)
