"""The dependency graph of the catalog's materialized tables, for ``%mt lineage`` (metadata only, no Spark)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace


@dataclass(frozen=True)
class Lineage:
    """Every materialized table with the tables it reads; a source that is not materialized is a plain table."""

    upstream: Mapping[str, tuple[str, ...]]
    """Materialized table → every source it reads (materialized or plain), fully qualified."""

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every table in the graph, materialized and plain, sorted."""
        return tuple(sorted(set(self.upstream) | {s for sources in self.upstream.values() for s in sources}))

    def is_materialized(self, name: str) -> bool:
        return name in self.upstream

    def around(self, name: str) -> Lineage:
        """The part of the graph connected to ``name``: its ancestors and its descendants.

        Raises:
            KeyError: ``name`` is not in the graph.
        """
        if name not in self.nodes:
            raise KeyError(name)
        ancestors = self._walk(name, lambda n: self.upstream.get(n, ()))
        downstream = {n: tuple(m for m, srcs in self.upstream.items() if n in srcs) for n in self.nodes}
        descendants = self._walk(name, lambda n: downstream[n])
        keep = ancestors | descendants | {name}
        return Lineage({m: tuple(s for s in srcs if s in keep) for m, srcs in self.upstream.items() if m in keep})

    @staticmethod
    def _walk(start: str, step: Callable[[str], Iterable[str]]) -> set[str]:
        seen: set[str] = set()
        todo = list(step(start))
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(step(node))
        return seen


def lineage(workspace: Workspace) -> Lineage:
    """Read every materialized table's sources from the catalog."""
    return Lineage({info.name: tuple(info.definition.upstream) for info in workspace.catalog.list_materialized()
                    if info.definition is not None})
