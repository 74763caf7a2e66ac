import itertools
import os
import random
import sys

import pytest

sys.path.insert(0, os.getcwd())

from solution import CycleError, topological_sort  # noqa: E402


def nodes_of(graph):
    return set(graph) | {v for targets in graph.values() for v in targets}


def brute(graph):
    """Smallest valid order by trying permutations in sorted order; None if cyclic."""
    nodes = sorted(nodes_of(graph))
    edges = {(u, v) for u, targets in graph.items() for v in targets}
    for perm in itertools.permutations(nodes):
        position = {node: i for i, node in enumerate(perm)}
        if all(position[u] < position[v] for u, v in edges):
            return list(perm)
    return None


def test_example():
    assert topological_sort({"b": ["c"], "a": ["c"], "c": ["d"]}) == ["a", "b", "c", "d"]


def test_empty():
    assert topological_sort({}) == []


def test_isolated_and_target_only_nodes():
    assert topological_sort({"z": [], "m": ["a"]}) == ["m", "a", "z"]


def test_repeated_edges():
    assert topological_sort({"a": ["b", "b", "b"], "b": []}) == ["a", "b"]


def test_two_cycle():
    with pytest.raises(CycleError):
        topological_sort({"x": ["y"], "y": ["x"]})


def test_self_loop():
    with pytest.raises(CycleError):
        topological_sort({"a": ["a"]})


def test_cycle_behind_valid_part():
    with pytest.raises(CycleError):
        topological_sort({"start": ["p"], "p": ["q"], "q": ["r"], "r": ["p"]})


def test_cycle_error_is_value_error():
    assert issubclass(CycleError, ValueError)
    with pytest.raises(ValueError):
        topological_sort({"u": ["v"], "v": ["w"], "w": ["u"]})


def test_random_small_against_brute_force():
    rng = random.Random(3)
    names = ["a", "b", "c", "d", "e", "f"]
    for _ in range(300):
        graph = {}
        for _ in range(rng.randint(0, 8)):
            u, v = rng.choice(names), rng.choice(names)
            graph.setdefault(u, []).append(v)
        expected = brute(graph)
        if expected is None:
            with pytest.raises(CycleError):
                topological_sort(graph)
        else:
            assert topological_sort(graph) == expected, graph


def test_large_chain():
    n = 100_000
    names = [f"n{i:06d}" for i in range(n)]
    graph = {names[i]: [names[i + 1]] for i in range(n - 1)}
    assert topological_sort(graph) == names
    graph[names[-1]] = [names[0]]
    with pytest.raises(CycleError):
        topological_sort(graph)
