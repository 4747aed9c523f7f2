"""``%mt lineage`` as a picture: the dependency graph, sources left, each node coloured by its freshness (SVG).

Layered layout: a table's column is one more than its deepest source's, plain Iceberg sources in the first
column; within a column, tables sit near the average row of what they read (one barycentre pass keeps
edges short). A pure function of the lineage and the statuses.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass

from mt_magic.runtime.graph import Lineage
from mt_magic.runtime.status import TableStatus
from mt_magic.runtime.workspace import human_duration
from mt_magic.widgets.badges import freshness_badge, status_level

NODE_W, NODE_H, COL_GAP, ROW_GAP, MARGIN = 220, 48, 70, 18, 14


@dataclass(frozen=True)
class Placed:
    name: str
    column: int
    row: int

    @property
    def x(self) -> int:
        return MARGIN + self.column * (NODE_W + COL_GAP)

    @property
    def y(self) -> int:
        return MARGIN + self.row * (NODE_H + ROW_GAP)


def layout(graph: Lineage) -> dict[str, Placed]:
    """Column and row of every node (see the module docstring)."""
    depth: dict[str, int] = {}

    def depth_of(name: str, seen: frozenset[str] = frozenset()) -> int:
        if name not in depth:
            sources = [s for s in graph.reads.get(name, ()) if s not in seen]
            depth[name] = 1 + max((depth_of(s, seen | {name}) for s in sources), default=-1)
        return depth[name]

    columns: dict[int, list[str]] = {}
    for name in graph.nodes:
        columns.setdefault(depth_of(name), []).append(name)
    rows: dict[str, int] = {}
    for column in sorted(columns):

        def centre(name: str) -> tuple[float, str]:
            parents = [rows[s] for s in graph.reads.get(name, ()) if s in rows]
            return (sum(parents) / len(parents) if parents else 0.0, name)

        for row, name in enumerate(sorted(columns[column], key=centre)):
            rows[name] = row
    return {name: Placed(name, depth[name], rows[name]) for name in graph.nodes}


def _short(name: str, graph: Lineage) -> str:
    prefixes = {n.rsplit(".", 1)[0] for n in graph.nodes}
    return name.rsplit(".", 1)[-1] if len(prefixes) == 1 else name.split(".", 1)[-1]


def _node(p: Placed, graph: Lineage, status: TableStatus | None, focus: str | None, missing: set[str]) -> str:
    materialized = graph.is_materialized(p.name)
    if not materialized and p.name in missing:
        fill, ink, level, detail = "#ffffff", "#dc2626", "missing", "missing from the catalog"
    elif not materialized:
        fill, ink, level, detail = "#ffffff", "#111827", "source", "plain Iceberg table"
    elif status is None:
        fill, ink, level, detail = "#6b7280", "#ffffff", "unknown", "materialized (no status)"
    else:
        level_ = status_level(status)
        fill, ink, level = level_.colour, "#ffffff", level_.value
        behind, target = human_duration(status.staleness), human_duration(status.freshness)
        detail = f"{status.state.value} · {level} · {behind} / {target}"
        if status.missing_source is not None:
            detail = f"{status.state.value} · source missing: {_short(status.missing_source.source, graph)}"
    stroke, width = ("#111827", 3) if p.name == focus else ("#6b7280", 1)
    label, tip = _short(p.name, graph), f"{p.name}: {detail}"
    return (
        f'<g class="mt-node" data-table="{html.escape(p.name)}" data-level="{level}">'
        f"<title>{html.escape(tip)}</title>"
        f'<rect x="{p.x}" y="{p.y}" width="{NODE_W}" height="{NODE_H}" rx="7" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{width}"/>'
        f'<text x="{p.x + 9}" y="{p.y + 19}" font-size="13" font-weight="bold" fill="{ink}" '
        f'font-family="sans-serif">{html.escape(label[:30])}</text>'
        f'<text x="{p.x + 9}" y="{p.y + 37}" font-size="10.5" fill="{ink}" '
        f'font-family="sans-serif">{html.escape(detail[:38])}</text></g>'
    )


def _edge(src: Placed, dst: Placed) -> str:
    x1, y1 = src.x + NODE_W, src.y + NODE_H / 2
    x2, y2 = dst.x - 2, dst.y + NODE_H / 2
    bend = (x2 - x1) / 2
    return (
        f'<path class="mt-edge" d="M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}" fill="none" '
        'stroke="#9ca3af" stroke-width="1.6" marker-end="url(#mt-arrow)"/>'
    )


def _missing_sources(statuses: Mapping[str, TableStatus]) -> set[str]:
    return {s.missing_source.source for s in statuses.values() if s.missing_source is not None}


def lineage_svg(graph: Lineage, statuses: Mapping[str, TableStatus], focus: str | None = None) -> str:
    """The graph as SVG; ``focus`` (if given) is outlined. Empty string for an empty graph."""
    if not graph.nodes:
        return ""
    placed = layout(graph)
    width = MARGIN * 2 + (max(p.column for p in placed.values()) + 1) * (NODE_W + COL_GAP) - COL_GAP
    height = MARGIN * 2 + (max(p.row for p in placed.values()) + 1) * (NODE_H + ROW_GAP) - ROW_GAP
    edges = [_edge(placed[s], placed[m]) for m, sources in graph.reads.items() for s in sources if s in placed]
    missing = _missing_sources(statuses)
    nodes = [_node(placed[n], graph, statuses.get(n), focus, missing) for n in graph.nodes]
    arrow = (
        '<defs><marker id="mt-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#9ca3af"/></marker></defs>'
    )
    return (
        f'<svg class="mt-lineage" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{arrow}{"".join(edges)}{"".join(nodes)}</svg>'
    )


def lineage_text(graph: Lineage, statuses: Mapping[str, TableStatus]) -> str:
    """``a ← b, c`` lines, with each materialized table's freshness badge."""
    lines = []
    for name in sorted(graph.reads):
        status = statuses.get(name)
        badge = f" [{freshness_badge(status).label}]" if status is not None else ""
        lines.append(f"{name}{badge} ← {', '.join(graph.reads[name]) or '(no sources)'}")
    missing = _missing_sources(statuses)
    plain = [n + (" (missing)" if n in missing else "") for n in graph.nodes if not graph.is_materialized(n)]
    if plain:
        lines.append("plain Iceberg sources: " + ", ".join(plain))
    return "\n".join(lines)
