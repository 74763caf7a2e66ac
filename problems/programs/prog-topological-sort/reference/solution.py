import heapq


class CycleError(ValueError):
    """Raised when the graph has a cycle."""


def topological_sort(graph: dict[str, list[str]]) -> list[str]:
    """Lexicographically smallest order with u before v for every edge u -> v."""
    indegree: dict[str, int] = {}
    for node, targets in graph.items():
        indegree.setdefault(node, 0)
        for target in targets:
            indegree[target] = indegree.get(target, 0) + 1
    ready = [node for node, degree in indegree.items() if degree == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for target in graph.get(node, ()):
            indegree[target] -= 1
            if indegree[target] == 0:
                heapq.heappush(ready, target)
    if len(order) != len(indegree):
        raise CycleError("the graph has a cycle")
    return order
