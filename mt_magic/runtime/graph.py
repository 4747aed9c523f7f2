"""The one dependency graph of materialized tables: who reads whom, in which order, and what a cascade reaches.

Every walk over "table → the tables it reads" lives here — the manager's ordering and cascades, DROP's
dependents, ``%mt lineage`` — as pure functions of an *upstream map* (table → its sources, fully qualified).
Metadata only: nothing here runs Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace

Upstream = Mapping[str, Iterable[str]]
"""Table → the tables it reads directly (fully qualified names)."""

Partition = tuple[tuple[str, str], ...]


def _walk(start: str, step: Callable[[str], Iterable[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(step(start))
    while todo:
        node = todo.pop()
        if node not in seen and node != start:
            seen.add(node)
            todo.extend(step(node))
    return seen


def ancestors(name: str, upstream: Upstream) -> set[str]:
    """Every table ``name`` reads from, directly or through other tables (itself excluded, cycles tolerated)."""
    return _walk(name, lambda node: upstream.get(node, ()))


def dependents(name: str, upstream: Upstream) -> list[str]:
    """The tables that read ``name`` directly, sorted by name."""
    return sorted(table for table, sources in upstream.items() if name in sources and table != name)


def descendants(name: str, upstream: Upstream) -> list[str]:
    """Every table that reads ``name`` directly or transitively, upstream first (ties by name)."""
    found = _walk(name, lambda node: dependents(node, upstream))
    order: list[str] = []
    pending = set(found)
    while pending:
        ready = sorted(n for n in pending if not (set(upstream.get(n, ())) & pending))
        ready = ready or sorted(pending)  # a cycle cannot be created, but never loop forever
        order.extend(ready)
        pending -= set(ready)
    return order


def blocking_ancestors(name: str, upstream: Upstream) -> set[str]:
    """The ancestors ``name`` must wait for: all of them except those in a cycle with it (which would deadlock)."""
    return {node for node in ancestors(name, upstream) if name not in ancestors(node, upstream)}


def cascaded_partition(partition: Partition, partitioned_by: Iterable[str]) -> Partition:
    """The partition a cascaded backfill refreshes downstream: the same one where the downstream table is
    partitioned by those columns, else the whole table (``()``) — the one rule every cascade follows."""
    return partition if partition and {k for k, _ in partition} <= set(partitioned_by) else ()


@dataclass(frozen=True)
class Lineage:
    """Every materialized table with the tables it reads; a source that is not materialized is a plain table.

    The graph around one table (:meth:`around`) keeps that table as its ``focus``: ``upstream`` and ``downstream``
    are then the tables it reads and the materialized tables reading it, directly — ``upstream`` is the same answer
    as the table's ``TableStatus.upstream``.
    """

    reads: Mapping[str, tuple[str, ...]]
    """Materialized table → every source it reads (materialized or plain), fully qualified."""
    focus: str | None = None
    """The table this graph was drawn around (``None``: the whole catalog's graph)."""

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every table in the graph, materialized and plain, sorted."""
        return tuple(sorted(set(self.reads) | {s for sources in self.reads.values() for s in sources}))

    def is_materialized(self, name: str) -> bool:
        return name in self.reads

    @property
    def upstream(self) -> tuple[str, ...]:
        """The tables the focus reads directly, in its definition's order (``()`` for a plain table)."""
        return tuple(self.reads.get(self._focus(), ()))

    @property
    def downstream(self) -> tuple[str, ...]:
        """The materialized tables that read the focus directly, sorted."""
        focus = self._focus()
        return tuple(sorted(m for m, sources in self.reads.items() if focus in sources))

    def _focus(self) -> str:
        if self.focus is None:
            raise ValueError(
                "the whole catalog's lineage has no single upstream: read lineage.reads (table → sources), or draw "
                "it around one table (table(name).lineage, %mt lineage NAME)."
            )
        return self.focus

    def around(self, name: str) -> Lineage:
        """The part of the graph connected to ``name`` (its ancestors and descendants), focused on it.

        Raises:
            KeyError: ``name`` is not in the graph.
        """
        if name not in self.nodes:
            raise KeyError(name)
        keep = ancestors(name, self.reads) | set(descendants(name, self.reads)) | {name}
        return Lineage({m: tuple(s for s in srcs if s in keep) for m, srcs in self.reads.items() if m in keep}, name)


def lineage(workspace: Workspace) -> Lineage:
    """Read every materialized table's sources from the catalog, exactly as they are now (a reader another process
    created a moment ago is in it): each table whose metadata did not change since this process last read it is
    answered from that read, so a statement that needs the graph (DROP, RENAME, a conversion, a cascade) does not
    fetch and parse every table of the catalog again. On the embedded server that costs one request for every
    table's ETag plus a load of each changed table; elsewhere one conditional request per table
    (``MaterializedCatalog.list_materialized``)."""
    return Lineage(
        {
            info.name: tuple(info.definition.upstream)
            for info in workspace.catalog.list_materialized(reuse_unchanged=True)
            if info.definition is not None
        }
    )
