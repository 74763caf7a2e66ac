"""The credit rules of `gitswarm export` (`gitswarm.export.credit`) on small graphs built by
hand, each expected figure worked out by hand in the comment beside it."""

from __future__ import annotations

import pytest

from gitswarm.export.credit import RULES, CreditGraph, Work, ancestry, ancestry_reviews, step_rewards


def test_a_chain_of_citations_halves_at_each_step_and_nothing_reaches_outside():
    graph = CreditGraph.of([Work("S", ("A",)), Work("A", ("B",)), Work("B"), Work("C", ("A",))],
                           solution="S", grades={"S": 1.0})
    # S gets its grade 1; A gets half of S's; B half of A's; C cites A but is not cited: none.
    assert ancestry(graph) == {"S": 1.0, "A": 0.5, "B": 0.25}


def test_a_share_is_split_among_the_cited_commits_and_summed_over_paths():
    graph = CreditGraph.of([Work("S", ("A", "B")), Work("A", ("C",)), Work("B", ("C",)), Work("C")],
                           solution="S", grades={"S": 0.8})
    # S 0.8 passes 0.4, split: A 0.2, B 0.2; each passes 0.1 to C, which sums them: 0.2.
    assert ancestry(graph) == pytest.approx({"S": 0.8, "A": 0.2, "B": 0.2, "C": 0.2})


def test_the_decay_is_a_parameter():
    graph = CreditGraph.of([Work("S", ("A",)), Work("A", ("B", "C"))], solution="S", grades={"S": 1.0})
    # decay 0.9: A 0.9; A passes 0.81, split between B and C: 0.405 each.
    assert ancestry(graph, decay=0.9) == pytest.approx({"S": 1.0, "A": 0.9, "B": 0.405, "C": 0.405})


@pytest.mark.parametrize("solution, grades", [(None, {"S": 1.0}), ("S", {}), ("S", {"A": 1.0})])
def test_no_selected_and_graded_solution_means_no_credit(solution, grades):
    graph = CreditGraph.of([Work("S", ("A",)), Work("A")], solution=solution, grades=grades)
    assert ancestry(graph) == {}
    assert ancestry_reviews(graph) == {}


def test_a_critical_review_of_an_attempt_graded_low_earns_credit():
    works = [Work("S", ("R1", "X")), Work("X"), Work("R1", ("X",), reviews="X", verdict="critical"),
             Work("Y"), Work("R2", ("Y",), reviews="Y", verdict="critical"),
             Work("R3", ("X",), reviews="X", verdict="pass"),
             Work("R4", ("Z",), reviews="Z", verdict="critical"), Work("Z")]
    graph = CreditGraph.of(works, solution="S", grades={"S": 1.0, "X": 0.2, "Y": 0.9})
    # ancestry: S 1; R1 and X 0.25 each; X's share from R1: 0.5 * 0.25 = 0.125, so X 0.375.
    assert ancestry(graph) == pytest.approx({"S": 1.0, "R1": 0.25, "X": 0.375})
    # R1 also blocked X, graded 0.2 < 0.5: + 0.5 * (1 - 0.2) = 0.4. R2's candidate was graded 0.9,
    # R3 passed X, R4's candidate was never graded: nothing for them.
    assert ancestry_reviews(graph) == pytest.approx({"S": 1.0, "R1": 0.65, "X": 0.375})


def test_a_critical_review_earns_outside_any_ancestry_too():
    graph = CreditGraph.of([Work("X"), Work("R", ("X",), reviews="X", verdict="critical")],
                           grades={"X": 0.0})
    assert ancestry(graph) == {}
    assert ancestry_reviews(graph) == {"R": 0.5}


def test_a_commit_citing_itself_or_twice_does_not_loop():
    graph = CreditGraph.of([Work("S", ("S", "A", "A")), Work("A")], solution="S", grades={"S": 1.0})
    # S's own cite is ignored; A is named twice and receives both halves of 0.5.
    assert ancestry(graph) == {"S": 1.0, "A": 0.5}


def test_the_rules_are_offered_by_name_and_a_step_reward_comes_last():
    assert set(RULES) == {"ancestry", "ancestry+reviews"}
    assert step_rewards(0.6, 3) == [0.0, 0.0, 0.6]
    assert step_rewards(0.6, 0) == []
