class CycleError(ValueError):
    """Raised when the graph has a cycle."""


def topological_sort(graph: dict[str, list[str]]) -> list[str]:
    """Lexicographically smallest order with u before v for every edge u -> v."""
    raise NotImplementedError
