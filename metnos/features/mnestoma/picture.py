"""A PNG of the mnestoma (networkx + matplotlib's Agg canvas, no system packages).

Nodes are executors sized by use (invocations), edges are mnests as wide as their weight;
when traces exist, each trace has its colour (nodes and the edges inside it); quarantined
and archived executors are grey. An empty mnestoma is a picture saying so, not an error.
The layout is seeded: the same mnestoma draws the same picture. Drawn on a `Figure` of its
own (never pyplot's global state), so concurrent requests do not share a canvas.

matplotlib and networkx are loaded by the first picture, not with the module: the gateway
imports this page's sizes at start and most instances never draw.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

WIDTH_PX = 1200
HEIGHT_PX = 900
DPI = 100
MAX_EDGES = 300  # the heaviest mnests drawn; the table lists the rest
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#7f7f7f")
NO_TRACE = "#4c72b0"
GREY = "#c8c8c8"
EDGE_GREY = "#9a9a9a"


def render(view: dict[str, Any], *, title: str, empty: str, width_px: int = WIDTH_PX,
           height_px: int = HEIGHT_PX) -> bytes:
    """The PNG bytes of `view` (`metnos.features.mnestoma.views.snapshot`), exactly `width_px` ×
    `height_px`; `title` and `empty` (the "nothing yet" line) are in the reader's language."""
    import matplotlib

    matplotlib.use("Agg")  # before anything imports pyplot (networkx's drawing may)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0.02, 0.02, 0.96, 0.90))
    ax.set_axis_off()
    figure.suptitle(title, fontsize=14)
    graph = _graph(view)
    if graph.number_of_nodes() == 0:
        ax.text(0.5, 0.5, empty, ha="center", va="center", fontsize=16, color="#555555",
                wrap=True, transform=ax.transAxes)
    else:
        _draw(ax, graph, view)
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI)
    return out.getvalue()


def _graph(view: dict[str, Any]) -> nx.DiGraph:
    import networkx as nx

    graph = nx.DiGraph()
    for mnest in view.get("mnests", [])[:MAX_EDGES]:
        if mnest["weight"] > 0:
            graph.add_edge(mnest["src"], mnest["dst"], weight=float(mnest["weight"]))
    for executor in view.get("executors", []):  # used executors without mnests show too
        if executor["invocations"] > 0:
            graph.add_node(executor["name"])
    return graph


def _draw(ax: Any, graph: nx.DiGraph, view: dict[str, Any]) -> None:
    import networkx as nx

    uses = {e["name"]: e for e in view.get("executors", [])}
    trace_of = {member: index for index, trace in enumerate(view.get("traces", []))
                for member in trace["members"]}
    most = max((uses.get(n, {}).get("invocations", 0) for n in graph.nodes), default=0) or 1
    nodes = list(graph.nodes)
    colours = [_colour(n, uses, trace_of) for n in nodes]
    sizes = [400 + 2600 * math.sqrt(uses.get(n, {}).get("invocations", 0) / most)
             for n in nodes]
    edges = list(graph.edges(data="weight"))
    heaviest = max((w for _, _, w in edges), default=1.0) or 1.0
    widths = [0.8 + 6.0 * w / heaviest for _, _, w in edges]
    edge_colours = [PALETTE[trace_of[a] % len(PALETTE)]
                    if a in trace_of and trace_of.get(b) == trace_of[a] else EDGE_GREY
                    for a, b, _ in edges]
    pos = nx.spring_layout(graph, seed=13, weight="weight",
                           k=2.0 / math.sqrt(max(graph.number_of_nodes(), 1)))
    nx.draw_networkx_nodes(graph, pos, ax=ax, nodelist=nodes, node_color=colours,
                           node_size=sizes, alpha=0.9, linewidths=1.0, edgecolors="#333333")
    nx.draw_networkx_edges(graph, pos, ax=ax, edgelist=[(a, b) for a, b, _ in edges],
                           width=widths, edge_color=edge_colours, alpha=0.75, arrows=True,
                           arrowsize=14, node_size=sizes, connectionstyle="arc3,rad=0.08")
    nx.draw_networkx_labels(graph, pos, ax=ax, font_size=9)
    ax.margins(0.12)


def _colour(name: str, uses: dict[str, Any], trace_of: dict[str, int]) -> str:
    if uses.get(name, {}).get("state", "active") != "active":
        return GREY
    if name in trace_of:
        return PALETTE[trace_of[name] % len(PALETTE)]
    return NO_TRACE
