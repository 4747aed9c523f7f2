"""The kernel's connection as every layer of the runtime sees it, and the one clock.

A :class:`Workspace` is what statements, refreshes, explain, lineage and previews share: one Spark session,
one catalog, the namespace for unqualified names, the FRESHNESS rules, and the clock (injected, so tests
control time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.errors import DefinitionError
from mt_magic.sql.names import TableName, name_part_problem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mt_magic.sql.ddl.freshness import FreshnessRules

Clock = Callable[[], datetime]
"""A timezone-aware "now"."""


def utc_text(at: datetime) -> str:
    """How every view writes a time: ``2025-01-01 10:00:05 UTC``."""
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def utc_now() -> datetime:
    """The current time, timezone-aware UTC: the default clock everywhere."""
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Workspace:
    """The kernel's connection: one Spark session, one catalog, and the defaults for unqualified names."""

    spark: SparkSession
    catalog: MaterializedCatalog
    default_namespace: str
    rules: FreshnessRules
    clock: Callable[[], datetime]

    def qualify(self, name: TableName) -> str:
        """``catalog.namespace.table`` for a name as written.

        Raises:
            DefinitionError: another catalog, or a name part this dotted text cannot carry (``sql.names``).
        """
        for part in (name.catalog, name.name):
            problem = None if part is None else name_part_problem(part)
            if problem is not None:
                raise DefinitionError(f"{name}: {problem}.")
        if name.catalog and name.catalog != self.catalog.spark_name:
            raise DefinitionError(
                f"{name}: materialized tables live in catalog {self.catalog.spark_name!r}, not {name.catalog!r}."
            )
        return ".".join((self.catalog.spark_name, name.namespace or self.default_namespace, name.name))
