"""The contribution graph of a problem as an inline SVG, laid out and drawn by libraries:
networkx places the nodes in layers (topological generations), matplotlib draws them.

Both come with the `report` extra: `pip install 'gitswarm[report]'`.
"""

from __future__ import annotations

import io

from gitswarm.report.graph import Graph

COLOURS = {"note": "#4e79a7", "lemma": "#59a14f", "attempt": "#f28e2b", "review": "#b07aa1", "code": "#e15759"}
INSTALL = "the HTML report draws graphs with networkx and matplotlib: pip install 'gitswarm[report]'"


class MissingDrawingLibrary(RuntimeError):
    """networkx or matplotlib is not installed."""


def _libraries():
    try:
        import matplotlib
        import networkx as nx
    except ImportError as exc:
        raise MissingDrawingLibrary(f"{INSTALL} ({exc.name} is missing)") from None
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    return nx, plt


def digraph(graph: Graph, problem: str, nx):
    """Contributions as nodes; edges for citations and direct inheritance (transitively reduced)."""
    mine = {n.id: n for n in graph.contributions(problem)}
    g = nx.DiGraph()
    for node in mine.values():
        g.add_node(node.id, kind=node.kind)
    for node in mine.values():
        inherited = graph.closure(node.parents[0], citations=False) & mine.keys() if node.parents else set()
        for older in inherited | (set(node.cited) & mine.keys()):
            if older != node.id:
                g.add_edge(older, node.id, cited=older in node.cited)
    reduced = nx.transitive_reduction(g) if nx.is_directed_acyclic_graph(g) else g
    reduced.add_nodes_from(g.nodes(data=True))
    reduced.add_edges_from((u, v, g.edges[u, v]) for u, v in reduced.edges)
    return reduced


def svg(graph: Graph, problem: str, selected: str | None) -> str:
    """The drawing: nodes coloured by kind, the selected candidate's ancestry outlined in black."""
    nx, plt = _libraries()
    g = digraph(graph, problem, nx)
    if not g:
        return "<p>no contributions</p>"
    for layer, nodes in enumerate(nx.topological_generations(g)):
        for n in nodes:
            g.nodes[n]["layer"] = layer
    pos = nx.multipartite_layout(g, subset_key="layer")
    ancestry = graph.closure(selected) if selected else set()
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * (1 + max(d["layer"] for _, d in g.nodes(data=True)))), 3))
    nodes = list(g)
    nx.draw_networkx_nodes(g, pos, nodelist=nodes, ax=ax, node_size=900,
                           node_color=[COLOURS.get(g.nodes[n]["kind"], "#999") for n in nodes],
                           edgecolors=["#000" if n in ancestry else "#ccc" for n in nodes],
                           linewidths=[3 if n in ancestry else 1 for n in nodes])
    nx.draw_networkx_edges(g, pos, ax=ax, node_size=900, arrows=True,
                           style=["dashed" if g.edges[e].get("cited") else "solid" for e in g.edges],
                           edge_color=["#000" if e[1] in ancestry and e[0] in ancestry else "#aaa" for e in g.edges])
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=6,
                            labels={n: f"{g.nodes[n]['kind'][:3]}\n{n[:5]}" for n in nodes})
    ax.set_axis_off()
    handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=k) for k, c in COLOURS.items()]
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1, 1), frameon=False)
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg"):]
