"""The fallback selection, when no candidate is verified: never one with more critical reviews
over one with fewer, and one every candidate's reviews rejected is called so (docs/verification.md)."""

from __future__ import annotations

import pytest

from gitswarm.domain.candidate import Candidate
from gitswarm.domain.kinds import Verification
from gitswarm.domain.review import ReviewCounts
from gitswarm.domain.rule import Rule
from gitswarm.domain.selection import Selection, Standing, choose
from gitswarm.readmodel.model import Counts, ProblemState

RULE = Rule(verify=2)


@pytest.mark.parametrize(("standings", "chosen", "mark"), [
    # the newest of two rejected ones has more critical reviews: the older, less rejected one is chosen
    ([Standing("old", critical=1, order=0), Standing("new", critical=2, order=1)], "old", Verification.REJECTED),
    # more passes or nominations do not outweigh a critical review more
    ([Standing("a", critical=2, passes=3, nominations=3), Standing("b", critical=1)], "b", Verification.REJECTED),
    # none rejected: the most passes, unverified
    ([Standing("a", passes=1, order=1), Standing("b", critical=1, passes=1, order=2)], "a", Verification.UNVERIFIED),
    # equal critical reviews: then passes, as before
    ([Standing("a", critical=1, passes=0), Standing("b", critical=1, passes=1)], "b", Verification.REJECTED),
    # a verified one is chosen whatever the others' reviews
    ([Standing("a", passes=2), Standing("b", critical=0, passes=1, nominations=4)], "a", Verification.VERIFIED),
])
def test_the_fallback_prefers_fewer_critical_reviews(standings: list[Standing], chosen: str, mark: Verification):
    choice = choose(standings, RULE)
    assert choice is not None and (choice.commit, choice.mark) == (chosen, mark)


def test_every_view_of_a_rejected_selection_says_so():
    rejected = Candidate("problems/p/attempts/a.md", "a", reviews=ReviewCounts(critical=1))
    plain = Candidate("problems/p/attempts/b.md", "b")
    assert (rejected.verification, plain.verification) == ("rejected by reviews", "unverified")
    selection = Selection("a", rejected.path, 0, verified=False, rejected=True)
    state = ProblemState("p", "proof", "stopped", Counts(), (rejected, plain), selection, "a", None, False, 2)
    assert state.verification == "rejected by reviews"
    assert ProblemState("p", "proof", "stopped", Counts(), (plain,), None, "b", None, False, 2).verification == (
        "unverified")
