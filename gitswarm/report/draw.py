"""The contribution graph of a problem as an inline SVG, laid out and drawn by libraries:
networkx places the nodes in layers (topological generations), matplotlib draws them.

Both come with the `report` extra: `pip install 'gitswarm[report]'`.
"""

from __future__ import annotations

import io

from gitswarm.errors import EnvironmentFault
from gitswarm.report.graph import Graph, ancestry

COLOURS = {"note": "#4e79a7", "lemma": "#59a14f", "attempt": "#f28e2b", "review": "#b07aa1", "code": "#e15759"}
FONT = 10
"""Points, as drawn; the page scales the drawing down only when it is wider than the window."""
INSTALL = "pip install 'gitswarm[report]'"


class MissingDrawingLibrary(EnvironmentFault):
    """networkx or matplotlib is not installed."""

    def __init__(self, missing: str) -> None:
        super().__init__(f"the report is written without its contribution graphs: {missing} is not installed",
                         where=missing, fix=f"to add them: {INSTALL}")
        self.missing = missing


def check() -> None:
    """Raise `MissingDrawingLibrary` unless both drawing libraries import."""
    _libraries()


def _libraries():
    try:
        import matplotlib
        import networkx as nx
    except ImportError as exc:
        raise MissingDrawingLibrary(exc.name or "networkx or matplotlib") from None
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


def label(graph: Graph, node: str, kind: str) -> str:
    """A node's text: its kind in full, a review's verdict, and the commit's first 7 digits."""
    verdict = graph.nodes[node].verdict if node in graph.nodes else ""
    return "\n".join(filter(None, [kind, verdict, node[:7]]))


def svg(graph: Graph, problem: str, selected: str | None) -> str:
    """The drawing: nodes coloured by kind, the selected candidate's ancestry outlined in black,
    a legend of the kinds it shows; its text stays text (searchable, sized by the page's font)."""
    nx, plt = _libraries()
    g = digraph(graph, problem, nx)
    if not g:
        return "<p>no contributions</p>"
    out = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        fig = _figure(graph, g, nx, plt, ancestry(graph, problem, selected) if selected else set())
        fig.savefig(out, format="svg", bbox_inches="tight")
        plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg"):]


def _figure(graph: Graph, g, nx, plt, ancestry: set[str]):
    for layer, nodes in enumerate(nx.topological_generations(g)):
        for n in nodes:
            g.nodes[n]["layer"] = layer
    pos = nx.multipartite_layout(g, subset_key="layer")
    layers = 1 + max(d["layer"] for _, d in g.nodes(data=True))
    tallest = max(sum(d["layer"] == k for _, d in g.nodes(data=True)) for k in range(layers))
    fig, ax = plt.subplots(figsize=(max(5, 2.0 * layers), max(3, 1.3 * tallest)))
    nodes = list(g)
    nx.draw_networkx_nodes(g, pos, nodelist=nodes, ax=ax, node_size=2400,
                           node_color=[COLOURS.get(g.nodes[n]["kind"], "#999") for n in nodes],
                           edgecolors=["#000" if n in ancestry else "#ccc" for n in nodes],
                           linewidths=[3 if n in ancestry else 1 for n in nodes])
    nx.draw_networkx_edges(g, pos, ax=ax, node_size=2400, arrows=True,
                           style=["dashed" if g.edges[e].get("cited") else "solid" for e in g.edges],
                           edge_color=["#000" if e[1] in ancestry and e[0] in ancestry else "#aaa" for e in g.edges])
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=FONT,
                            labels={n: label(graph, n, g.nodes[n]["kind"]) for n in nodes})
    ax.margins(0.12)
    ax.set_axis_off()
    present = {g.nodes[n]["kind"] for n in nodes}
    shown = [k for k in COLOURS if k in present] + sorted(present - COLOURS.keys())
    handles = [plt.Line2D([], [], marker="o", ls="", markersize=10, color=COLOURS.get(k, "#999"), label=k)
               for k in shown]
    ax.legend(handles=handles, fontsize=FONT, title="kind", title_fontsize=FONT, loc="upper left",
              bbox_to_anchor=(1, 1), frameon=False)
    return fig
