"""DROP MATERIALIZED TABLE [IF EXISTS] [CASCADE]: who would be dropped is decided first (dependents refuse a drop
without CASCADE), then each table's Iceberg view and the table go, views first and put back if the table stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.errors import (
    DefinitionError,
    DependencyError,
    NoSuchMaterializedTableError,
)
from mt_magic.runtime.graph import descendants, lineage
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.workspace import Workspace

if TYPE_CHECKING:
    pass


def plan_drop(ws: Workspace, name: str, if_exists: bool, cascade: bool) -> list[str]:
    """What a DROP would remove, dependents first; checks everything and changes nothing.

    Returns:
        The tables to drop in order (empty: ``IF EXISTS`` on a missing table).

    Raises:
        NoSuchMaterializedTableError: no such materialized table (and no ``IF EXISTS``).
        DefinitionError: it is a plain Iceberg table.
        DependencyError: other materialized tables read it and ``cascade`` was not given.
    """
    upstream = lineage(ws).reads
    if name not in upstream:
        if ws.catalog.exists(name):
            raise DefinitionError(f"DROP MATERIALIZED TABLE {name}: it is a plain Iceberg table; use DROP TABLE.")
        if if_exists:
            return []
        raise NoSuchMaterializedTableError(
            f"DROP MATERIALIZED TABLE {name}: no such materialized table. Use DROP MATERIALIZED TABLE IF EXISTS."
        )
    dependents = descendants(name, upstream)
    if dependents and not cascade:
        raise DependencyError(
            f"DROP MATERIALIZED TABLE {name}: {', '.join(dependents)} read(s) it. Drop those first, or use "
            "`%%materialized --cascade` to drop them too."
        )
    return [*reversed(dependents), name]


def drop_tables(ws: Workspace, victims: list[str]) -> list[str]:
    """Drop (and purge) ``victims`` and their views in order; returns those dropped before any failure re-raises."""
    dropped: list[str] = []
    for victim in victims:
        iceberg_view.drop_with_view(ws, victim)
        dropped.append(victim)
    return dropped
