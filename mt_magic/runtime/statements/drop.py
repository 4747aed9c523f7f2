"""DROP MATERIALIZED TABLE [IF EXISTS] [CASCADE]: who would be dropped is decided first (dependents refuse a drop
without CASCADE), then each table's Iceberg view and the table go, views first and put back if the table stays.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mt_magic.errors import (
    DefinitionError,
    DependencyError,
    NoSuchMaterializedTableError,
)
from mt_magic.runtime.graph import descendants
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.workspace import Workspace

if TYPE_CHECKING:
    from mt_magic.catalog.tables import TableInfo


@dataclass(frozen=True)
class DropPlan:
    """What a DROP removes, dependents first (empty: ``IF EXISTS`` on a missing table), with each table as the
    listing that found it read it: DROP's check hands this to its apply, which loads none of them again."""

    victims: tuple[str, ...]
    tables: Mapping[str, TableInfo] = field(default_factory=dict)


def plan_drop(
    ws: Workspace, name: str, if_exists: bool, cascade: bool, dropped_before: Collection[str] = ()
) -> DropPlan:
    """What a DROP would remove, dependents first; checks everything and changes nothing. One listing of the catalog
    (each table unchanged since this process read it is not loaded again, ``list_materialized``) is every read.
    ``dropped_before``: tables an earlier statement of the cell drops (they read nothing by then).

    Raises:
        NoSuchMaterializedTableError: no such materialized table (and no ``IF EXISTS``).
        DefinitionError: it is a plain Iceberg table.
        DependencyError: other materialized tables read it and ``cascade`` was not given.
    """
    tables = {
        info.name: info for info in ws.catalog.list_materialized(reuse_unchanged=True) if info.definition is not None
    }
    tables = {table: info for table, info in tables.items() if table not in dropped_before}
    upstream = {table: tuple(info.definition.upstream) for table, info in tables.items() if info.definition}
    if name not in upstream:
        if ws.catalog.exists(name):
            raise DefinitionError(
                f"DROP MATERIALIZED TABLE {name}: it is a plain Iceberg table",
                fix=f'drop it with Spark: spark.sql("DROP TABLE {name}")',
            )
        if if_exists:
            return DropPlan(())
        raise NoSuchMaterializedTableError(
            f"DROP MATERIALIZED TABLE {name}: no such materialized table",
            fix="check the name (SHOW MATERIALIZED TABLES lists them), or write DROP MATERIALIZED TABLE IF EXISTS",
        )
    dependents = descendants(name, upstream)
    if dependents and not cascade:
        raise DependencyError(
            f"DROP MATERIALIZED TABLE {name}: {', '.join(dependents)} read(s) it",
            fix="drop those first, or run the cell as `%%materialized --cascade` to drop them too",
        )
    victims = (*reversed(dependents), name)
    return DropPlan(victims, {victim: tables[victim] for victim in victims})


def drop_tables(ws: Workspace, victims: list[str], read: Mapping[str, TableInfo] | None = None) -> list[str]:
    """Drop (and purge) ``victims`` and their views in order; returns those dropped before any failure re-raises.
    ``read``: the tables as the DROP's plan read them (not loaded again)."""
    dropped: list[str] = []
    for victim in victims:
        iceberg_view.drop_with_view(ws, victim, (read or {}).get(victim))
        dropped.append(victim)
    return dropped
