"""The kernel's connection as every layer of the runtime sees it, the one clock, and how a time or a duration
reads.

A :class:`Workspace` is what statements, refreshes, explain, lineage and previews share: one Spark session,
one catalog, the namespace for unqualified names, the FRESHNESS rules, and the clock (injected, so tests
control time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.errors import DefinitionError
from mt_magic.sql.names import TableName, name_part_refusal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mt_magic.sql.ddl.freshness import FreshnessRules

Clock = Callable[[], datetime]
"""A timezone-aware "now"."""


def utc_text(at: datetime) -> str:
    """How every view writes a time: ``2025-01-01 10:00:05 UTC``."""
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def human_duration(delta: timedelta | None) -> str:
    """How every view and answer writes a duration: ``3m 05s`` (``1.2s`` below ten seconds, ``3h 05m``, ``2d 4h``);
    ``—`` when unknown."""
    if delta is None:
        return "—"
    total = max(delta.total_seconds(), 0.0)
    if total < 10 and total != int(total):
        return f"{total:.1f}s"
    seconds = int(total)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours < 48 else f"{hours // 24}d {hours % 24}h"


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

    def qualify(self, name: TableName, namespace: str | None = None) -> str:
        """``catalog.namespace.table`` for a name as written: THE name resolution of every statement and command.

        Args:
            namespace: where an unqualified name lives (default: the workspace's namespace); RENAME passes the
                renamed table's own, as Spark and Flink do.

        Raises:
            DefinitionError: another catalog, or a name part this dotted text cannot carry (``sql.names``).
        """
        for part in (name.catalog, name.name):
            refusal = None if part is None else name_part_refusal(part)
            if refusal is not None:
                raise DefinitionError(f"{name}: {refusal[0]}", fix=refusal[1])
        self._check_catalog(str(name), name.catalog)
        return ".".join((self.catalog.spark_name, name.namespace or namespace or self.default_namespace, name.name))

    def qualify_namespace(self, text: str) -> str:
        """The namespace (nested parts joined by '.') that ``SHOW … IN text`` names, checked to exist: a leading
        part equal to the catalog's Spark name is the catalog, as in Spark (``mt.sales`` is ``sales``).

        Raises:
            DefinitionError: another catalog's namespace, or a namespace the catalog does not have.
        """
        first, _, rest = text.partition(".")
        if rest and first == self.catalog.spark_name and not self.catalog.namespace_exists(text):
            text = rest
        if not self.catalog.namespace_exists(text):
            raise DefinitionError(
                f"Namespace {text!r} does not exist in catalog {self.catalog.spark_name!r}. "
                "Fix: SHOW MATERIALIZED TABLES without IN lists every namespace; create it with "
                f'spark.sql("CREATE NAMESPACE {self.catalog.spark_name}.{text}").'
            )
        return text

    def _check_catalog(self, written: str, catalog: str | None) -> None:
        if catalog and catalog != self.catalog.spark_name:
            raise DefinitionError(
                f"{written}: materialized tables live in catalog {self.catalog.spark_name!r}, not {catalog!r}."
            )
